import Encoding

/// Splits a gRPC request or response body into messages: each is a 1-byte compressed flag, a 4-byte big-endian
/// length and the payload. Bytes may arrive in any split; a declared length over the limit is refused before
/// anything is allocated for it.
public struct GRPCMessageDeframer: Sendable {
    /// Why a body could not be deframed.
    public enum Failure: Error, Equatable, Sendable {
        /// The declared message length exceeds the limit.
        case messageTooLarge(declared: Int, limit: Int)
        /// The compressed flag was set, but no compression was negotiated.
        case compressionNotSupported
        /// The flag byte was neither 0 nor 1.
        case invalidFlag
    }

    /// The largest message accepted.
    public let maxMessageSize: Int
    private var buffer: [UInt8] = []
    private var head = 0

    /// Creates a deframer accepting messages of at most `maxMessageSize` bytes.
    public init(maxMessageSize: Int) {
        self.maxMessageSize = maxMessageSize
    }

    /// Bytes received but not yet returned as a message.
    public var bufferedByteCount: Int { buffer.count - head }

    /// Adds received body bytes.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if head > 0 && head == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            head = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Adds received body bytes.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Returns the next complete message, nil when more bytes are needed, or throws when the frame is invalid.
    public mutating func next() throws(Failure) -> [UInt8]? {
        let available = buffer.count - head
        guard available >= 5 else { return nil }
        let flag = buffer[head]
        guard flag <= 1 else { throw .invalidFlag }
        let length =
            Int(buffer[head + 1]) << 24 | Int(buffer[head + 2]) << 16 | Int(buffer[head + 3]) << 8
            | Int(buffer[head + 4])
        guard length <= maxMessageSize else { throw .messageTooLarge(declared: length, limit: maxMessageSize) }
        if flag == 1 { throw .compressionNotSupported }
        guard available - 5 >= length else { return nil }
        if head == 0 && buffer.count == 5 + length {
            // The buffer holds exactly this message (the usual unary case): hand its storage over.
            buffer.removeFirst(5)
            let message = buffer
            buffer = []
            return message
        }
        let start = head + 5
        let message = Array(buffer[start..<(start + length)])
        head = start + length
        if head == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
            head = 0
        }
        return message
    }
}

/// Frames messages with the 5-byte gRPC prefix.
public enum GRPCMessageFramer {
    /// Appends `message` to `output` with an uncompressed prefix.
    public static func frame(_ message: [UInt8], into output: inout [UInt8]) {
        let length = UInt32(truncatingIfNeeded: message.count)
        output.append(0)
        output.append(UInt8(truncatingIfNeeded: length >> 24))
        output.append(UInt8(truncatingIfNeeded: length >> 16))
        output.append(UInt8(truncatingIfNeeded: length >> 8))
        output.append(UInt8(truncatingIfNeeded: length))
        output.append(contentsOf: message)
    }

    /// `message` with its prefix.
    public static func frame(_ message: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(message.count + 5)
        frame(message, into: &output)
        return output
    }
}

/// The `grpc-timeout` header: at most 8 ASCII digits followed by a unit (H, M, S, m, u, n).
public enum GRPCTimeout {
    /// Parses a header value into nanoseconds; nil when malformed. Values too large saturate.
    public static func parse(_ text: String) -> UInt64? {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8.count <= 9, let unit = utf8.last, let digits = DecimalText.parse(utf8.dropLast())
        else { return nil }
        let value = UInt64(digits)
        let multiplier: UInt64
        switch unit {
        case UInt8(ascii: "H"): multiplier = 3_600_000_000_000
        case UInt8(ascii: "M"): multiplier = 60_000_000_000
        case UInt8(ascii: "S"): multiplier = 1_000_000_000
        case UInt8(ascii: "m"): multiplier = 1_000_000
        case UInt8(ascii: "u"): multiplier = 1_000
        case UInt8(ascii: "n"): multiplier = 1
        default: return nil
        }
        let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
        return overflow ? UInt64.max : product
    }

    /// Encodes nanoseconds in the finest unit that fits in 8 digits (rounding up, so a deadline is never shortened).
    public static func encode(nanoseconds: UInt64) -> String {
        let units: [(UInt64, Character)] = [
            (1, "n"), (1_000, "u"), (1_000_000, "m"), (1_000_000_000, "S"), (60_000_000_000, "M"),
            (3_600_000_000_000, "H"),
        ]
        for (size, unit) in units {
            let value = (nanoseconds + size - 1) / size
            if value <= 99_999_999 { return "\(value)\(unit)" }
        }
        return "99999999H"
    }
}

/// Percent-encoding of `grpc-message`: bytes outside printable ASCII (0x20...0x7E) and `%` become `%XX` of UTF-8.
public enum GRPCPercentEncoding {
    private static let hex = Array("0123456789ABCDEF".utf8)

    /// Encodes a status message for the wire.
    public static func encode(_ text: String) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if byte >= 0x20 && byte <= 0x7e && byte != UInt8(ascii: "%") {
                output.append(byte)
            } else {
                output.append(UInt8(ascii: "%"))
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 15)])
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes a received status message; malformed escapes are kept as they are, invalid UTF-8 is replaced.
    public static func decode(_ text: String) -> String {
        let input = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            if input[index] == UInt8(ascii: "%"), index + 2 < input.count,
                let high = Hex.value(of: input[index + 1]), let low = Hex.value(of: input[index + 2])
            {
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(input[index])
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}

/// Content types accepted as gRPC.
enum GRPCContentType {
    static func isGRPC(_ value: String) -> Bool {
        value == "application/grpc" || value.hasPrefix("application/grpc+") || value.hasPrefix("application/grpc;")
    }
}
