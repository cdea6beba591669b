import Foundation
import HTTPMessages
import JSON
import ServiceContracts

/// The admin API's access-token signing keys: list, rotate a new one in, retire an old one (docs/sessions.md).
extension AdminApplication {
    func listSigningKeys(_ call: AdminCall) async throws -> HTTPResponse {
        var request = SigningKeysRequest()
        request.adminToken = call.token
        let listed = try await call.admin.listSigningKeys(request)
        return GatewayApplication.json(200, .object(["keys": .array(listed.keys.map(Self.signingKey))]))
    }

    func rotateSigningKey(_ call: AdminCall) async throws -> HTTPResponse {
        var request = SigningKeysRequest()
        request.adminToken = call.token
        return GatewayApplication.json(201, Self.signingKey(try await call.admin.rotateSigningKey(request)))
    }

    func retireSigningKey(_ call: AdminCall) async throws -> HTTPResponse {
        var request = RetireSigningKeyRequest()
        request.adminToken = call.token
        request.keyID = try call.context.parameter("keyID")
        guard request.keyID.utf8.count <= 128 else { throw APIProblem.invalidRequest("The key ID is too long.") }
        return GatewayApplication.json(200, Self.signingKey(try await call.admin.retireSigningKey(request)))
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
