import Foundation
import HTTPMessages
import JSON
import ServiceContracts

/// The admin API's access-token signing keys: list, rotate a new one in, retire an old one (docs/sessions.md).
extension AdminApplication {
    func listSigningKeys(_ context: AdminContext) async throws -> HTTPResponse {
        var request = SigningKeysRequest()
        request.adminToken = context.adminToken
        let listed = try await adminService(context).listSigningKeys(request)
        return GatewayApplication.json(200, .object(["keys": .array(listed.keys.map(Self.signingKey))]))
    }

    func rotateSigningKey(_ context: AdminContext) async throws -> HTTPResponse {
        var request = SigningKeysRequest()
        request.adminToken = context.adminToken
        return GatewayApplication.json(201, Self.signingKey(try await adminService(context).rotateSigningKey(request)))
    }

    func retireSigningKey(_ context: AdminContext) async throws -> HTTPResponse {
        var request = RetireSigningKeyRequest()
        request.adminToken = context.adminToken
        request.keyID = context.parameter("keyID")
        guard request.keyID.utf8.count <= 128 else { throw APIProblem.invalidRequest("The key ID is too long.") }
        return GatewayApplication.json(200, Self.signingKey(try await adminService(context).retireSigningKey(request)))
    }

    /// A signing key as the admin API shows it: never its private half.
    static func signingKey(_ entry: SigningKeyEntry) -> JSONValue {
        .object([
            "keyID": .string(entry.keyID), "algorithm": .string(entry.algorithm), "state": .string(entry.state),
            "createdAt": time(entry.createdAtUnixMilliseconds), "activatesAt": time(entry.activatesAtUnixMilliseconds),
            "retiredAt": time(entry.retiredAtUnixMilliseconds),
        ])
    }
}
