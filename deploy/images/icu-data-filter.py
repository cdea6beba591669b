#!/usr/bin/env python3
"""Writes a smaller copy of an ICU common data package (the `icudtNNl.dat` layout that Foundation's static
_FoundationICU links in as `icudtNN_dat`): the locale bundles of every tree are kept only for the locales named on
the command line (root always), legacy charset converters (*.cnv, UTF-8/16/32, ASCII and Latin-1 are built into
ICU) and break-iterator dictionaries (*.dict) are dropped, and the rest (properties, normalization, time zones,
supplemental data, rules) is kept. The output is byte-for-byte determined by the input.

usage: icu-data-filter.py INPUT.dat OUTPUT.dat LOCALE...
"""
import re
import struct
import sys

LOCALE_NAME = re.compile(r"^(?:[a-z]{2,3}|root)(?:_[A-Za-z0-9]+)*\.res$")


def read_package(data):
    header_size, magic = struct.unpack_from("<HH", data, 0)
    if magic != 0x27DA or data[12:16] != b"CmnD":
        raise SystemExit("not an ICU common data package")
    toc = header_size
    (count,) = struct.unpack_from("<I", data, toc)
    entries = []
    for index in range(count):
        name_offset, data_offset = struct.unpack_from("<II", data, toc + 4 + 8 * index)
        end = data.index(b"\0", toc + name_offset)
        entries.append((data[toc + name_offset:end].decode("ascii"), data_offset))
    items = []
    for index, (name, offset) in enumerate(entries):
        end = entries[index + 1][1] if index + 1 < count else len(data) - toc
        items.append((name, data[toc + offset:toc + end]))
    return data[:header_size], items


def keep(name, locales):
    base = name.split("/")[-1]
    if base.endswith(".cnv") or base.endswith(".dict"):
        return False
    if base.startswith("translit/") or "/translit/" in name:
        return False
    if LOCALE_NAME.match(base):
        return base[:-4] in locales
    return True


def write_package(header, items):
    count = len(items)
    names = b"".join(name.encode("ascii") + b"\0" for name, _ in items)
    table_size = 4 + 8 * count
    first_item = table_size + len(names)
    first_item += (-first_item) % 16
    out = bytearray(header)
    out += struct.pack("<I", count)
    name_offset, data_offset = table_size, first_item
    offsets = []
    for name, body in items:
        offsets.append((name_offset, data_offset))
        name_offset += len(name) + 1
        data_offset += len(body) + (-len(body)) % 16
    for pair in offsets:
        out += struct.pack("<II", *pair)
    out += names
    out += b"\0" * (first_item - table_size - len(names))
    for _, body in items:
        out += body
        out += b"\0" * ((-len(body)) % 16)
    return bytes(out)


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    source, target, locales = sys.argv[1], sys.argv[2], set(sys.argv[3:]) | {"root"}
    header, items = read_package(open(source, "rb").read())
    kept = [(name, body) for name, body in items if keep(name, locales)]
    # ICU finds items by binary search over the table, so the names stay in the input's (sorted) order.
    output = write_package(header, kept)
    with open(target, "wb") as file:
        file.write(output)
    print(f"ICU data: kept {len(kept)} of {len(items)} items, {len(output)} of {sum(len(b) for _, b in items)} bytes",
          file=sys.stderr)


if __name__ == "__main__":
    main()
