import Configuration
import Domain
import Foundation
import GRPC
import GRPCHealth
import GatewayCore
import JSON
import NetworkIO
import Observability
import ServiceContracts
import Synchronization
import XCTest

/// The gateway against real gRPC servers standing in for the services: requests, domain errors with their WebAuthn
/// reasons, and replicas used in turn all cross the wire as they will in production.
final class GatewayGRPCTests: XCTestCase {
    func makeService(name: String, counter: Counter) throws -> GRPCServer {
        let server = GRPCServer(
            configuration: {
                var configuration = GRPCServerConfiguration(address: SocketAddress(host: "127.0.0.1", port: 0))
                configuration.threadCount = 1
                return configuration
            }())
        HealthService().register(on: server)
        server.register(
            GRPCUnaryMethod(ChallengeServiceMethods.beginAuthentication) {
                (_: BeginAuthenticationRequest, _: ServerContext) in
                counter.add(name)
                var response = BeginAuthenticationResponse()
                response.challengeID = "challenge-from-\(name)"
                response.challenge = Array(repeating: 0x5A, count: 32)
                response.relyingPartyID = "localhost"
                response.timeoutMilliseconds = 300_000
                response.expiresAtUnixMilliseconds = 1_800_000_300_000
                return response
            })
        server.register(
            GRPCUnaryMethod(VerificationServiceMethods.finishAuthentication) {
                (request: FinishAuthenticationRequest, _: ServerContext) -> FinishAuthenticationResponse in
                guard request.credential?.userHandle == [1, 2, 3] else {
                    throw ServiceErrors.rpcError(
                        DomainError(
                            .invalidCredentials, "the user handle is not the credential's",
                            reason: "user_handle_mismatch"))
                }
                throw ServiceErrors.rpcError(DomainError(.challengeUnavailable, "used"))
            })
        server.register(
            GRPCUnaryMethod(SessionServiceMethods.validateSession) {
                (request: ValidateSessionRequest, _: ServerContext) -> SessionInfo in
                guard request.accessToken == "good" else {
                    throw ServiceErrors.rpcError(DomainError(.unauthenticated, "unknown token"))
                }
                var info = SessionInfo()
                info.sessionID = "s"
                info.accountID = "a"
                info.authenticationMethod = .passkey
                return info
            })
        try server.start()
        return server
    }

    final class Counter: Sendable {
        private let counts = Mutex<[String: Int]>([:])
        func add(_ name: String) { counts.withLock { $0[name, default: 0] += 1 } }
        var values: [String: Int] { counts.withLock { $0 } }
    }

    func testRequestsAndErrorsCrossTheWireAndReplicasShareTheLoad() async throws {
        let counter = Counter()
        let first = try makeService(name: "one", counter: counter)
        let second = try makeService(name: "two", counter: counter)
        defer {
            first.shutdown()
            second.shutdown()
        }
        let addresses = [first, second].compactMap { $0.localAddress?.description }.joined(separator: ",")
        let configuration = try GatewayConfiguration(environment: [
            // The test's services are plaintext doubles.
            "GRPC_PLAINTEXT": "true",
            "CHALLENGE_SERVICE_ADDRESSES": addresses, "VERIFICATION_SERVICE_ADDRESSES": addresses,
            "SESSION_SERVICE_ADDRESSES": addresses,
        ])
        let gateway = try Gateway(
            configuration: configuration, logger: Logger(service: "gateway", minimumLevel: .error),
            listenAddress: SocketAddress(host: "127.0.0.1", port: 0))
        let port = try gateway.start().port
        defer { gateway.shutdown() }
        let connection = try RawHTTPConnection(port: port)
        func post(_ path: String, _ body: String, headers: String = "") -> RawHTTPConnection.Response? {
            connection.send(
                "POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\(headers)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
            )
            return connection.readResponse()
        }
        // A connection takes calls once its server's SETTINGS have arrived: the first calls may all go to the
        // replica that answered first. Once both connections are ready, calls alternate.
        let deadline = Date().addingTimeInterval(5)
        while (counter.values["one"] ?? 0) == 0 || (counter.values["two"] ?? 0) == 0, Date() < deadline {
            XCTAssertEqual(post("/v1/passkeys/authentications", "{}")?.status, 200)
        }
        let before = counter.values
        for _ in 0..<10 {
            let started = post("/v1/passkeys/authentications", "{}")
            XCTAssertEqual(started?.status, 200)
            XCTAssertEqual(started?.json?["publicKey"]?["rpId"], "localhost")
            XCTAssertEqual(started?.json?["expiresAt"], "2027-01-15T08:05:00Z")
        }
        XCTAssertEqual((counter.values["one"] ?? 0) - (before["one"] ?? 0), 5)
        XCTAssertEqual((counter.values["two"] ?? 0) - (before["two"] ?? 0), 5)

        let mismatch = post(
            "/v1/passkeys/authentications/finish",
            #"{"challengeID":"3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c","credentialID":"AQ","clientDataJSON":"AQ","authenticatorData":"AQ","signature":"AQ","userHandle":"BAUG"}"#
        )
        XCTAssertEqual(mismatch?.status, 401)
        XCTAssertEqual(mismatch?.json?["code"], "invalid_credentials")
        XCTAssertEqual(mismatch?.json?["reason"], "user_handle_mismatch")
        let used = post(
            "/v1/passkeys/authentications/finish",
            #"{"challengeID":"3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c","credentialID":"AQ","clientDataJSON":"AQ","authenticatorData":"AQ","signature":"AQ","userHandle":"AQID"}"#
        )
        XCTAssertEqual(used?.status, 410)
        XCTAssertEqual(used?.json?["code"], "challenge_unavailable")

        connection.send("GET /v1/session HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer bad\r\n\r\n")
        XCTAssertEqual(connection.readResponse()?.status, 401)
        connection.send("GET /v1/session HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\n\r\n")
        let session = connection.readResponse()
        XCTAssertEqual(session?.status, 200)
        XCTAssertEqual(session?.json?["authenticationMethod"], "passkey")
        connection.send("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(connection.readResponse()?.status, 200)
        // A method the service does not have is a backend failure, not the client's.
        connection.send("GET /v1/account HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\n\r\n")
        XCTAssertEqual(connection.readResponse()?.status, 503)
    }
}
