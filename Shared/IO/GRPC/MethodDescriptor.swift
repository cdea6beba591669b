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

/// What sends a typed unary call, adding what its application needs (metrics, error mapping) around a
/// ``GRPCClient``. Generated typed clients call through one.
public protocol GRPCUnaryCaller: Sendable {
    /// Calls `method` with `request`. `idempotent`: whether the call may be retried on another server after it may
    /// have run.
    func call<Request, Response>(
        _ method: GRPCMethodDescriptor<Request, Response>, _ request: Request, idempotent: Bool
    ) async throws -> Response
}

/// Runs around each call of the methods it is registered with, in the shape of grpc-swift-2's `ServerInterceptor`: it
/// may read the call's metadata, wrap the handler in what every call needs (a span, metrics, error mapping), or
/// refuse the call by throwing. A service names the interceptors it registers, the first outermost
/// (``GRPCUnaryMethod/init(_:interceptors:handler:)``, and the generated `register(on:interceptors:)`).
public protocol GRPCServerInterceptor: Sendable {
    func intercept<Request, Response>(
        _ request: Request, context: ServerContext, method: GRPCMethodDescriptor<Request, Response>,
        next: @Sendable (Request, ServerContext) async throws -> Response
    ) async throws -> Response
}

extension GRPCUnaryMethod {
    /// Serves `method` with `handler`, whose types are the method's, each call passing through `interceptors` (the
    /// first outermost) on its way to the handler.
    public init(
        _ method: GRPCMethodDescriptor<Request, Response>, interceptors: [any GRPCServerInterceptor] = [],
        handler: @escaping @Sendable (Request, ServerContext) async throws -> Response
    ) {
        self.init(path: method.path) { request, context in
            try await Self.run(interceptors[...], method, request, context, handler)
        }
    }

    private static func run(
        _ interceptors: ArraySlice<any GRPCServerInterceptor>, _ method: GRPCMethodDescriptor<Request, Response>,
        _ request: Request, _ context: ServerContext,
        _ handler: @escaping @Sendable (Request, ServerContext) async throws -> Response
    ) async throws -> Response {
        guard let first = interceptors.first else { return try await handler(request, context) }
        return try await first.intercept(request, context: context, method: method) { request, context in
            try await run(interceptors.dropFirst(), method, request, context, handler)
        }
    }
}
