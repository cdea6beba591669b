import Domain
import GRPC
import Protobuf

/// Calls another service and reads its failures back as domain errors.
///
/// A failure the callee raised as a `DomainError` comes back as that error; a callee that cannot be reached,
/// times out, or fails internally becomes `.unavailable`, so callers never see transport detail.
public struct ServiceClient: Sendable {
    public let client: GRPCClient
    /// The time budget of each call.
    public let deadline: Duration

    public init(client: GRPCClient, deadline: Duration = .seconds(3)) {
        self.client = client
        self.deadline = deadline
    }

    public func call<Request: ProtobufMessage, Response: ProtobufMessage>(
        _ path: String, _ request: Request, as responseType: Response.Type = Response.self, idempotent: Bool = false
    ) async throws -> Response {
        do {
            return try await client.unary(
                path: path, request: request, responseType: responseType, deadline: deadline, idempotent: idempotent)
        } catch let error as RPCError {
            if let domain = ServiceErrors.domainError(from: error) { throw domain }
            throw DomainError(.unavailable, "\(path) failed: \(error.code)")
        }
    }
}
