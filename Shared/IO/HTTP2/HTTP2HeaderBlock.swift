#if canImport(Glibc)
    import Glibc
#endif

/// A received header block (request or response headers, or trailers), kept as raw bytes so that a receiver
/// turns into `String`s only the fields it needs. Valid during the delegate call that hands it out; copy
/// what must outlive it (``headers`` or ``value(forName:)``).
public struct HTTP2HeaderBlock {
    @usableFromInline struct Field {
        @usableFromInline var nameStart: Int
        @usableFromInline var nameLength: Int
        @usableFromInline var valueStart: Int
        @usableFromInline var valueLength: Int

        @usableFromInline init(nameStart: Int, nameLength: Int, valueStart: Int, valueLength: Int) {
            self.nameStart = nameStart
            self.nameLength = nameLength
            self.valueStart = valueStart
            self.valueLength = valueLength
        }
    }

    /// The field bytes, in `storage[0..<used]`; the array is kept at its grown size between blocks so that
    /// appending is a bounds check and a copy.
    // Inlinable lookups: a receiver compares every field's name against several constants per request.
    @usableFromInline var storage: [UInt8] = []
    var used = 0
    @usableFromInline var fields: [Field] = []

    /// An empty block.
    public init() {}

    /// A block holding `headers` (for tests and for callers that build blocks themselves).
    public init(_ headers: [HTTP2Header]) {
        for header in headers { append(name: Array(header.name.utf8), value: Array(header.value.utf8)) }
    }

    /// The number of fields.
    @inlinable public var count: Int { fields.count }

    mutating func removeAll() {
        used = 0
        fields.removeAll(keepingCapacity: true)
    }

    mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let nameStart = used
        let valueStart = used + name.count
        let end = valueStart + value.count
        if end > storage.count {
            storage.append(contentsOf: repeatElement(0, count: max(end, 2 * storage.count, 256) - storage.count))
        }
        storage.withUnsafeMutableBufferPointer { bytes in
            let base = bytes.baseAddress!
            if let source = name.baseAddress { (base + nameStart).update(from: source, count: name.count) }
            if let source = value.baseAddress { (base + valueStart).update(from: source, count: value.count) }
        }
        used = end
        fields.append(
            Field(nameStart: nameStart, nameLength: name.count, valueStart: valueStart, valueLength: value.count))
    }

    mutating func append(name: [UInt8], value: [UInt8]) {
        name.withUnsafeBufferPointer { name in
            value.withUnsafeBufferPointer { value in append(name: name, value: value) }
        }
    }

    /// The name of field `index`.
    public func name(at index: Int) -> String {
        let field = fields[index]
        return String(decoding: storage[field.nameStart..<(field.nameStart + field.nameLength)], as: UTF8.self)
    }

    /// The value of field `index`.
    public func value(at index: Int) -> String {
        let field = fields[index]
        return String(decoding: storage[field.valueStart..<(field.valueStart + field.valueLength)], as: UTF8.self)
    }

    /// Calls `body` with the bytes of field `index`'s value, without making a `String`.
    @inlinable public func withValueBytes<R>(at index: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let field = fields[index]
        return storage.withUnsafeBytes { bytes in
            body(UnsafeRawBufferPointer(rebasing: bytes[field.valueStart..<(field.valueStart + field.valueLength)]))
        }
    }

    /// True when field `index` is named `name` (compared as bytes, without making a `String`).
    @inlinable public func nameEquals(at index: Int, _ name: StaticString) -> Bool {
        let field = fields[index]
        return field.nameLength == name.utf8CodeUnitCount && bytesEqual(field.nameStart, name, name.utf8CodeUnitCount)
    }

    @inlinable func bytesEqual(_ start: Int, _ expected: StaticString, _ length: Int) -> Bool {
        storage.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress, start + length <= bytes.count else { return length == 0 }
            return memcmp(base + start, expected.utf8Start, length) == 0
        }
    }

    /// True when field `index`'s name starts with `prefix`.
    @inlinable public func nameHasPrefix(at index: Int, _ prefix: StaticString) -> Bool {
        let field = fields[index]
        return field.nameLength >= prefix.utf8CodeUnitCount
            && bytesEqual(field.nameStart, prefix, prefix.utf8CodeUnitCount)
    }

    /// True when field `index`'s value is `value` (compared as bytes).
    @inlinable public func valueEquals(at index: Int, _ value: StaticString) -> Bool {
        let field = fields[index]
        return field.valueLength == value.utf8CodeUnitCount
            && bytesEqual(field.valueStart, value, value.utf8CodeUnitCount)
    }

    /// The first value of the field named `name`.
    public func value(forName name: StaticString) -> String? {
        for index in 0..<fields.count where nameEquals(at: index, name) { return value(at: index) }
        return nil
    }

    /// Every field as text.
    public var headers: [HTTP2Header] {
        (0..<fields.count).map { HTTP2Header(name(at: $0), value(at: $0)) }
    }
}
