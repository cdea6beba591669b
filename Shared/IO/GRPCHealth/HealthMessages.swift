import Protobuf

/// `grpc.health.v1.HealthCheckRequest`.
public struct HealthCheckRequest: ProtobufMessage, Equatable {
    /// The service name; empty means the server as a whole.
    public var service = ""

    /// An empty request (the whole server).
    public init() {}

    /// A request for one service.
    public init(service: String) { self.service = service }

    public mutating func decodeField(number: UInt32, wireType: WireType, from reader: inout ProtobufReader) throws
        -> Bool
    {
        guard number == 1, wireType == .lengthDelimited else { return false }
        service = try reader.readString()
        return true
    }

    public func encode(to writer: inout ProtobufWriter) {
        writer.writeStringField(1, service)
    }
}

/// `grpc.health.v1.HealthCheckResponse.ServingStatus`.
public enum ServingStatus: Int32, Sendable, Equatable {
    case unknown = 0
    case serving = 1
    case notServing = 2
    case serviceUnknown = 3
}

/// `grpc.health.v1.HealthCheckResponse`.
public struct HealthCheckResponse: ProtobufMessage, Equatable {
    /// The serving status; unknown enum values read as `.unknown`.
    public var status: ServingStatus = .unknown

    /// An UNKNOWN response.
    public init() {}

    /// A response with `status`.
    public init(status: ServingStatus) { self.status = status }

    public mutating func decodeField(number: UInt32, wireType: WireType, from reader: inout ProtobufReader) throws
        -> Bool
    {
        guard number == 1, wireType == .varint else { return false }
        status = ServingStatus(rawValue: try reader.readInt32()) ?? .unknown
        return true
    }

    public func encode(to writer: inout ProtobufWriter) {
        writer.writeInt32Field(1, status.rawValue)
    }
}
