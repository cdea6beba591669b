import GRPC

/// The echo.v1.Echo handlers, shared by the test server executable and the integration tests.
public enum EchoService {
    /// `/echo.v1.Echo/Get`, the unary method clients call.
    public static let get = GRPCMethodDescriptor<EchoRequest, EchoResponse>(service: "echo.v1.Echo", name: "Get")
    /// `/echo.v1.Echo/Get`.
    public static let getPath = get.path
    /// `/echo.v1.Echo/GetInline`.
    public static let getInlinePath = "/echo.v1.Echo/GetInline"
    /// `/echo.v1.Echo/Expand`.
    public static let expandPath = "/echo.v1.Echo/Expand"

    /// Registers Get, GetInline and Expand on `server`.
    public static func register(on server: GRPCServer) {
        server.register(
            GRPCUnaryMethod(Self.get) { request, context in
                try await respond(to: request, context: context)
            })
        server.register(
            GRPCInlineUnaryMethod(path: getInlinePath) { (request: EchoRequest, context: ServerContext) in
                guard request.delayMilliseconds == 0 else {
                    throw RPCError(code: .invalidArgument, message: "GetInline cannot wait")
                }
                return try echo(request, context: context)
            })
        server.register(
            GRPCServerStreamingMethod(path: expandPath) {
                (request: EchoRequest, context: ServerContext, writer: ServerStreamWriter<EchoResponse>) in
                for index in 0..<max(request.count, 1) {
                    var response = try await respond(to: request, context: context)
                    response.text = "\(request.text) \(index)"
                    try await writer.write(response)
                }
            })
    }

    static func respond(to request: EchoRequest, context: ServerContext) async throws -> EchoResponse {
        if request.delayMilliseconds > 0 {
            try await Task.sleep(nanoseconds: UInt64(request.delayMilliseconds) * 1_000_000)
        }
        return try echo(request, context: context)
    }

    static func echo(_ request: EchoRequest, context: ServerContext) throws -> EchoResponse {
        if request.statusCode != 0 {
            throw RPCError(
                code: GRPCStatusCode(rawValue: Int(request.statusCode)) ?? .unknown, message: request.statusMessage)
        }
        var response = EchoResponse()
        response.text = request.text
        response.payload = request.payload
        response.echoedMetadata = context.metadata["x-echo"] ?? ""
        response.echoedBinaryMetadata = context.metadata.bytes("x-echo-bin") ?? []
        return response
    }
}
