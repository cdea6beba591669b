/// A W3C Trace Context (`traceparent`, version 00): which trace a piece of work belongs to, the span it runs in,
/// and whether that trace is sampled (its spans exported).
public struct TraceContext: Sendable, Equatable {
    /// 16 bytes, never all zero.
    public var traceID: TraceID
    /// 8 bytes, never zero.
    public var spanID: UInt64
    /// The `sampled` flag: the spans of this trace are recorded and exported.
    public var sampled: Bool

    public init(traceID: TraceID, spanID: UInt64, sampled: Bool) {
        self.traceID = traceID
        self.spanID = spanID
        self.sampled = sampled
    }

    /// The header's name, also the gRPC metadata key.
    public static let headerName = "traceparent"

    /// Reads a `traceparent` value: `00-<32 hex>-<16 hex>-<2 hex>`, lower-case hex, IDs not all zero. A later
    /// version is read by its first four fields, as the specification asks; version `ff` and anything malformed
    /// give nil (the caller then starts a trace of its own).
    public static func parse(traceparent text: String) -> TraceContext? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 55 else { return nil }
        guard let version = hexValue(bytes[0..<2]), version != 0xFF else { return nil }
        guard version == 0 ? bytes.count == 55 : (bytes.count == 55 || bytes[55] == UInt8(ascii: "-")) else {
            return nil
        }
        guard bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-"),
            let high = hexValue(bytes[3..<19]), let low = hexValue(bytes[19..<35]),
            let span = hexValue(bytes[36..<52]), let flags = hexValue(bytes[53..<55])
        else { return nil }
        guard high != 0 || low != 0, span != 0 else { return nil }
        return TraceContext(traceID: TraceID(high: high, low: low), spanID: span, sampled: flags & 1 == 1)
    }

    /// The `traceparent` value of this context.
    public var traceparent: String {
        var bytes: [UInt8] = Array("00-".utf8)
        bytes.reserveCapacity(55)
        appendHex(traceID.high, digits: 16, to: &bytes)
        appendHex(traceID.low, digits: 16, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendHex(spanID, digits: 16, to: &bytes)
        bytes.append(contentsOf: sampled ? Array("-01".utf8) : Array("-00".utf8))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Lower-case hex of one field; nil for any other character or a field over 16 digits.
    private static func hexValue(_ digits: ArraySlice<UInt8>) -> UInt64? {
        guard digits.count <= 16 else { return nil }
        var value: UInt64 = 0
        for digit in digits {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value << 4 | UInt64(digit - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = value << 4 | UInt64(digit - UInt8(ascii: "a") + 10)
            default: return nil
            }
        }
        return value
    }
}

/// A trace's 16-byte identifier.
public struct TraceID: Sendable, Hashable {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// 32 lower-case hex digits, as logs and the `traceparent` header show it.
    public var hex: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        appendHex(high, digits: 16, to: &bytes)
        appendHex(low, digits: 16, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The 16 bytes, big-endian, as OTLP carries them.
    public var bytes: [UInt8] { bigEndianBytes(high) + bigEndianBytes(low) }
}

private let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

func appendHex(_ value: UInt64, digits: Int, to bytes: inout [UInt8]) {
    for index in stride(from: digits - 1, through: 0, by: -1) {
        bytes.append(hexDigits[Int((value >> UInt64(index * 4)) & 0xF)])
    }
}

func bigEndianBytes(_ value: UInt64) -> [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: value >> UInt64(56 - $0 * 8)) }
}
