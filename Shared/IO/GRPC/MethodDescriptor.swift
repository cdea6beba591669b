import Protobuf

/// A unary method of a gRPC service: its path, bound to its request and response types. Handlers and calls take a
/// descriptor, so a method served or called with another message type does not compile. The descriptors of the
/// services' contracts are generated from their `.proto` files (`Shared/Composition/Protos/generate-swift`).
public struct GRPCMethodDescriptor<Request: ProtobufMessage, Response: ProtobufMessage>: Sendable {
    /// `package.Service`.
    public let service: String
    /// The method's name, `Method`.
    public let name: String
    /// `/package.Service/Method`, as sent in `:path`.
    public let path: String

    public init(service: String, name: String) {
        self.service = service
        self.name = name
        self.path = "/\(service)/\(name)"
    }
}

/// What sends a typed unary call: a client with a deadline (``GRPCDeadlineCaller``), or one that adds what its
/// application needs (metrics, error mapping) around a client. Generated typed clients call through one.
public protocol GRPCUnaryCaller: Sendable {
    /// Calls `method` with `request`. `idempotent`: whether the call may be retried on another server after it may
    /// have run.
    func call<Request, Response>(
        _ method: GRPCMethodDescriptor<Request, Response>, _ request: Request, idempotent: Bool
    ) async throws -> Response
}

/// What turns a typed handler into a method the server serves; generated handler protocols register through one.
public protocol GRPCUnaryMethodMaker: Sendable {
    func unary<Request, Response>(
        _ method: GRPCMethodDescriptor<Request, Response>,
        _ handler: @escaping @Sendable (Request, ServerContext) async throws -> Response
    ) -> GRPCUnaryMethod<Request, Response>
}

/// A ``GRPCClient`` with a deadline for every call.
public struct GRPCDeadlineCaller: GRPCUnaryCaller {
    public let client: GRPCClient
    public let deadline: Duration

    public init(client: GRPCClient, deadline: Duration) {
        self.client = client
        self.deadline = deadline
    }

    public func call<Request, Response>(
        _ method: GRPCMethodDescriptor<Request, Response>, _ request: Request, idempotent: Bool
    ) async throws -> Response {
        try await client.unary(
            path: method.path, request: request, responseType: Response.self, deadline: deadline,
            idempotent: idempotent)
    }
}

extension GRPCUnaryMethod {
    /// Serves `method` with `handler`, whose types are the method's.
    public init(
        _ method: GRPCMethodDescriptor<Request, Response>,
        handler: @escaping @Sendable (Request, ServerContext) async throws -> Response
    ) {
        self.init(path: method.path, handler: handler)
    }
}
