import NetworkIO
import Protobuf

#if canImport(Glibc)
    import Glibc
#endif

/// What a handler knows about the call it serves.
public struct ServerContext: Sendable {
    /// The method path, `/package.Service/Method`.
    public let path: String
    /// The caller's custom metadata.
    public let metadata: Metadata
    /// The monotonic time (``NetworkIO/monotonicNanoseconds()``) by which the caller gives up, if it set one.
    public let deadlineNanoseconds: UInt64?
    /// The caller's address, when known.
    public let peer: String

    /// Creates a context (servers make these; tests may too).
    public init(path: String, metadata: Metadata, deadlineNanoseconds: UInt64?, peer: String) {
        self.path = path
        self.metadata = metadata
        self.deadlineNanoseconds = deadlineNanoseconds
        self.peer = peer
    }

    /// Nanoseconds left before the deadline (nil without one, 0 when past).
    public var remainingNanoseconds: UInt64? {
        guard let deadlineNanoseconds else { return nil }
        let now = monotonicNanoseconds()
        return deadlineNanoseconds > now ? deadlineNanoseconds - now : 0
    }
}

/// Sends the messages of a server-streaming response.
public struct ServerStreamWriter<Message: ProtobufMessage>: Sendable {
    let sink: ResponseSink

    /// Queues a message to the caller; throws `CancellationError` once the call is over.
    public func write(_ message: Message) async throws {
        try Task.checkCancellation()
        guard sink.send(message.serializedBytes()) else { throw CancellationError() }
    }
}

/// How a registered method is run.
enum MethodKind: Sendable {
    /// Runs asynchronously off the loop and returns one serialized response.
    case unary(@Sendable ([UInt8], ServerContext) async throws -> [UInt8])
    /// Runs on the event loop itself; for handlers that never block or suspend.
    case inlineUnary(@Sendable ([UInt8], ServerContext) throws -> [UInt8])
    /// Runs asynchronously and writes any number of responses.
    case serverStreaming(@Sendable ([UInt8], ServerContext, ResponseSink) async throws -> Void)
}

/// The methods a server serves, found from the bytes of a request's `:path` without making a `String` or
/// hashing it: the handful of methods a service has are told apart by length first, then compared.
struct MethodTable: Sendable {
    private struct Entry: Sendable {
        let pathBytes: [UInt8]
        let path: String
        let kind: MethodKind
    }

    private let entries: [Entry]

    init(_ methods: [String: MethodKind]) {
        entries = methods.map { Entry(pathBytes: Array($0.key.utf8), path: $0.key, kind: $0.value) }
            .sorted { $0.path < $1.path }
    }

    /// The registered path (shared, not copied) and its method.
    func find(_ path: UnsafeRawBufferPointer) -> (path: String, kind: MethodKind)? {
        for entry in entries where entry.pathBytes.count == path.count {
            let equal = entry.pathBytes.withUnsafeBytes { candidate in
                path.count == 0 || memcmp(candidate.baseAddress!, path.baseAddress!, path.count) == 0
            }
            if equal { return (entry.path, entry.kind) }
        }
        return nil
    }
}

/// A method a ``GRPCServer`` serves.
public protocol GRPCServerMethod: Sendable {
    /// The method path, `/package.Service/Method`.
    var path: String { get }
    /// How the method runs.
    var kind: MethodKindBox { get }
}

/// Wraps the internal description of how a method runs.
public struct MethodKindBox: Sendable {
    let kind: MethodKind
}

/// A unary method whose handler is an `async` function, run off the event loop.
public struct GRPCUnaryMethod<Request: ProtobufMessage, Response: ProtobufMessage>: GRPCServerMethod {
    public let path: String
    public let kind: MethodKindBox

    /// Serves `path` with `handler`; a thrown ``RPCError`` becomes the call's status, anything else `UNKNOWN`.
    public init(
        path: String, handler: @escaping @Sendable (Request, ServerContext) async throws -> Response
    ) {
        self.path = path
        self.kind = MethodKindBox(
            kind: .unary { bytes, context in
                let request = try decodeRequest(Request.self, bytes)
                return try await handler(request, context).serializedBytes()
            })
    }
}

/// A unary method whose handler runs synchronously on the event loop thread, saving the hop to the task pool.
/// Only for handlers that are cheap and never block (pure computation on the request, in-memory state).
public struct GRPCInlineUnaryMethod<Request: ProtobufMessage, Response: ProtobufMessage>: GRPCServerMethod {
    public let path: String
    public let kind: MethodKindBox

    /// Serves `path` with `handler` on the loop thread.
    public init(path: String, handler: @escaping @Sendable (Request, ServerContext) throws -> Response) {
        self.path = path
        self.kind = MethodKindBox(
            kind: .inlineUnary { bytes, context in
                let request = try decodeRequest(Request.self, bytes)
                return try handler(request, context).serializedBytes()
            })
    }
}

/// A server-streaming method: one request, any number of responses.
public struct GRPCServerStreamingMethod<Request: ProtobufMessage, Response: ProtobufMessage>: GRPCServerMethod {
    public let path: String
    public let kind: MethodKindBox

    /// Serves `path` with `handler`, which writes responses to the writer and returns to end the call with OK.
    public init(
        path: String,
        handler: @escaping @Sendable (Request, ServerContext, ServerStreamWriter<Response>) async throws -> Void
    ) {
        self.path = path
        self.kind = MethodKindBox(
            kind: .serverStreaming { bytes, context, sink in
                let request = try decodeRequest(Request.self, bytes)
                try await handler(request, context, ServerStreamWriter(sink: sink))
            })
    }
}

private func decodeRequest<M: ProtobufMessage>(_ type: M.Type, _ bytes: [UInt8]) throws -> M {
    do { return try M(serializedBytes: bytes) } catch {
        throw RPCError(code: .internal, message: "could not decode the request message")
    }
}
