import Protobuf

/// `echo.v1.EchoRequest` (Shared/Composition/Protos/echo/v1/echo.proto).
public struct EchoRequest: ProtobufMessage, Equatable {
    public var text = ""
    public var statusCode: Int32 = 0
    public var statusMessage = ""
    public var delayMilliseconds: UInt32 = 0
    public var payload: [UInt8] = []
    public var count: UInt32 = 0

    public init() {}

    public init(text: String) { self.text = text }

    public mutating func decodeField(number: UInt32, wireType: WireType, from reader: inout ProtobufReader) throws
        -> Bool
    {
        switch (number, wireType) {
        case (1, .lengthDelimited): text = try reader.readString()
        case (2, .varint): statusCode = try reader.readInt32()
        case (3, .lengthDelimited): statusMessage = try reader.readString()
        case (4, .varint): delayMilliseconds = try reader.readUInt32()
        case (5, .lengthDelimited): payload = try reader.readBytes()
        case (6, .varint): count = try reader.readUInt32()
        default: return false
        }
        return true
    }

    public func encode(to writer: inout ProtobufWriter) {
        writer.writeStringField(1, text)
        writer.writeInt32Field(2, statusCode)
        writer.writeStringField(3, statusMessage)
        writer.writeVarintField(4, UInt64(delayMilliseconds))
        writer.writeBytesField(5, payload)
        writer.writeVarintField(6, UInt64(count))
    }
}

/// `echo.v1.EchoResponse`.
public struct EchoResponse: ProtobufMessage, Equatable {
    public var text = ""
    public var payload: [UInt8] = []
    public var echoedMetadata = ""
    public var echoedBinaryMetadata: [UInt8] = []

    public init() {}

    public mutating func decodeField(number: UInt32, wireType: WireType, from reader: inout ProtobufReader) throws
        -> Bool
    {
        switch (number, wireType) {
        case (1, .lengthDelimited): text = try reader.readString()
        case (2, .lengthDelimited): payload = try reader.readBytes()
        case (3, .lengthDelimited): echoedMetadata = try reader.readString()
        case (4, .lengthDelimited): echoedBinaryMetadata = try reader.readBytes()
        default: return false
        }
        return true
    }

    public func encode(to writer: inout ProtobufWriter) {
        writer.writeStringField(1, text)
        writer.writeBytesField(2, payload)
        writer.writeStringField(3, echoedMetadata)
        writer.writeBytesField(4, echoedBinaryMetadata)
    }
}
