import Encoding

/// The gRPC status codes (grpc/grpc `doc/statuscodes.md`).
public enum GRPCStatusCode: Int, Sendable, CaseIterable, CustomStringConvertible {
    case ok = 0
    case cancelled = 1
    case unknown = 2
    case invalidArgument = 3
    case deadlineExceeded = 4
    case notFound = 5
    case alreadyExists = 6
    case permissionDenied = 7
    case resourceExhausted = 8
    case failedPrecondition = 9
    case aborted = 10
    case outOfRange = 11
    case unimplemented = 12
    case `internal` = 13
    case unavailable = 14
    case dataLoss = 15
    case unauthenticated = 16

    /// Parses a `grpc-status` value; anything unparseable or out of range is `unknown`.
    public init(headerValue: String) {
        self.init(headerBytes: Array(headerValue.utf8))
    }

    /// Parses the bytes of a `grpc-status` value (at most 9 digits); anything else is `unknown`.
    public init<Bytes: Collection<UInt8>>(headerBytes: Bytes) {
        let number = headerBytes.count <= 9 ? DecimalText.parse(headerBytes) : nil
        self = number.flatMap { GRPCStatusCode(rawValue: Int($0)) } ?? .unknown
    }

    public var description: String {
        switch self {
        case .ok: "OK"
        case .cancelled: "CANCELLED"
        case .unknown: "UNKNOWN"
        case .invalidArgument: "INVALID_ARGUMENT"
        case .deadlineExceeded: "DEADLINE_EXCEEDED"
        case .notFound: "NOT_FOUND"
        case .alreadyExists: "ALREADY_EXISTS"
        case .permissionDenied: "PERMISSION_DENIED"
        case .resourceExhausted: "RESOURCE_EXHAUSTED"
        case .failedPrecondition: "FAILED_PRECONDITION"
        case .aborted: "ABORTED"
        case .outOfRange: "OUT_OF_RANGE"
        case .unimplemented: "UNIMPLEMENTED"
        case .internal: "INTERNAL"
        case .unavailable: "UNAVAILABLE"
        case .dataLoss: "DATA_LOSS"
        case .unauthenticated: "UNAUTHENTICATED"
        }
    }

    /// The status a client reports when a response ended with HTTP status `httpStatus` and no `grpc-status`
    /// (the mapping in grpc/grpc `doc/http-grpc-status-mapping.md`).
    public static func fromHTTPStatus(_ httpStatus: Int) -> GRPCStatusCode {
        switch httpStatus {
        case 400: .internal
        case 401: .unauthenticated
        case 403: .permissionDenied
        case 404: .unimplemented
        case 429, 502, 503, 504: .unavailable
        default: .unknown
        }
    }
}

/// An RPC failure with a gRPC status: thrown by handlers to choose the status a caller sees, and thrown by the
/// client when a call does not end with OK. The message is sent to the peer: keep it safe to show.
public struct RPCError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The gRPC status code.
    public var code: GRPCStatusCode
    /// The human-readable status message (`grpc-message`).
    public var message: String
    /// Trailing metadata to send with, or received with, the status.
    public var metadata: Metadata
    /// Where the error was created.
    public let location: String

    /// Creates an error with a status code and message.
    public init(
        code: GRPCStatusCode, message: String, metadata: Metadata = Metadata(), file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.metadata = metadata
        self.location = "\(file):\(line)"
    }

    public static func == (lhs: RPCError, rhs: RPCError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message
    }

    public var description: String { "\(code): \(message)" }
}
