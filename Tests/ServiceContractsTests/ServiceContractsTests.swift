import Domain
import Foundation
import GRPC
import Protobuf
import ServiceContracts
import XCTest

final class ServiceContractsTests: XCTestCase {
    func testMessagesRoundTripIncludingRepeatedEmptyElementsAndNestedMessages() throws {
        var response = BeginRegistrationResponse()
        response.challengeID = "c-1"
        response.challenge = [0, 1, 2, 255]
        response.expiresAtUnixMilliseconds = 1_700_000_000_000
        response.userHandle = [9, 9]
        var descriptor = CredentialDescriptor()
        descriptor.id = [7]
        descriptor.transports = ["usb", "", "internal"]
        response.excludeCredentials = [descriptor, CredentialDescriptor()]
        response.mode = .conditional
        let decoded = try BeginRegistrationResponse(serializedBytes: response.serializedBytes())
        XCTAssertEqual(decoded, response)

        var finish = FinishRegistrationRequest()
        finish.accountID = "a"
        var credential = RegistrationCredential()
        credential.attestationObject = Array(repeating: 0xA5, count: 300)
        credential.clientExtensionResultsJSON = Array("{\"credProps\":{\"rk\":true}}".utf8)
        finish.credential = credential
        XCTAssertEqual(try FinishRegistrationRequest(serializedBytes: finish.serializedBytes()), finish)
        XCTAssertNil(try FinishRegistrationRequest(serializedBytes: []).credential)
    }

    func testNegativeNumbersRoundTrip() throws {
        var info = SessionInfo()
        info.createdAtUnixMilliseconds = -5
        XCTAssertEqual(try SessionInfo(serializedBytes: info.serializedBytes()).createdAtUnixMilliseconds, -5)
    }

    func testTruncatedMessagesFailInsteadOfCrashing() {
        var request = FinishAuthenticationRequest()
        request.challengeID = "challenge"
        var credential = AuthenticationCredential()
        credential.signature = Array(repeating: 1, count: 70)
        request.credential = credential
        let bytes = request.serializedBytes()
        // Field 1 takes 2 + 9 bytes; a cut exactly after it is a valid shorter message, every other cut is not.
        for cut in 1..<bytes.count where cut != 11 {
            XCTAssertThrowsError(try FinishAuthenticationRequest(serializedBytes: bytes.prefix(cut)), "cut \(cut)")
        }
        XCTAssertNil(try FinishAuthenticationRequest(serializedBytes: bytes.prefix(11)).credential)
    }

    func testEveryDomainErrorSurvivesTheTrip() {
        for code in DomainError.Code.allCases {
            let error = DomainError(code, "message", reason: code == .verificationFailed ? "signature_invalid" : nil)
            let rpc = ServiceErrors.rpcError(error)
            XCTAssertEqual(rpc.code, ServiceErrors.statusCode(for: code))
            XCTAssertEqual(ServiceErrors.domainError(from: rpc), error)
        }
        XCTAssertNil(ServiceErrors.domainError(from: RPCError(code: .internal, message: "boom")))
    }

    func testARefusalCarriesItsRetryTimeAcrossTheCall() {
        let refusal = DomainError(
            .rateLimited, "too many", reason: "too_many_failed_guesses", retryAfterSeconds: 72)
        let rpc = ServiceErrors.rpcError(refusal)
        XCTAssertEqual(rpc.metadata[ServiceErrors.retryAfterKey], "72")
        XCTAssertEqual(ServiceErrors.domainError(from: rpc), refusal)
        // A retry time that is not a small positive number is dropped, not passed on.
        for bad in ["0", "-1", "86401", "1e3", "", "72 "] {
            var metadata = Metadata()
            metadata.add(ServiceErrors.codeKey, "rate_limited")
            metadata.add(ServiceErrors.retryAfterKey, bad)
            let read = ServiceErrors.domainError(
                from: RPCError(code: .resourceExhausted, message: "m", metadata: metadata))
            XCTAssertEqual(read?.code, .rateLimited, bad)
            XCTAssertNil(read?.retryAfterSeconds, bad)
        }
    }

    func testMethodPathsFollowTheProtoPackage() {
        XCTAssertEqual(ChallengeServiceMethods.beginRegistration.path, "/passkey.v1.ChallengeService/BeginRegistration")
        XCTAssertEqual(
            VerificationServiceMethods.finishAuthentication.path, "/passkey.v1.VerificationService/FinishAuthentication"
        )
        XCTAssertEqual(SessionServiceMethods.validateSession.path, "/passkey.v1.SessionService/ValidateSession")
        XCTAssertEqual(SessionServiceMethods.validateSession.name, "ValidateSession")
        XCTAssertEqual(ChallengeServiceMethods.paths.count, 3)
        XCTAssertFalse(SessionServiceMethods.paths.contains("/passkey.v1.SessionService/CreateSession"))
    }

    func testEnumsAreTheDomainsWithTheirWireNumbersAndUnknownNumbersReadAsUnset() throws {
        XCTAssertEqual(RegistrationMode.modal.protobufValue, 1)
        XCTAssertEqual(RegistrationMode.conditional.protobufValue, 2)
        XCTAssertEqual(AuthenticationMethod.password.protobufValue, 1)
        XCTAssertEqual(AuthenticationMethod.passkey.protobufValue, 2)
        for value in RegistrationMode.allCases {
            XCTAssertEqual(RegistrationMode(protobufValue: value.protobufValue), value)
        }
        XCTAssertNil(RegistrationMode(protobufValue: 0), "zero is unspecified")

        var request = BeginRegistrationRequest()
        request.mode = .conditional
        request.sessionAuthenticationMethod = .password
        let decoded = try BeginRegistrationRequest(serializedBytes: request.serializedBytes())
        XCTAssertEqual(decoded.mode, .conditional)
        XCTAssertEqual(decoded.sessionAuthenticationMethod, .password)
        XCTAssertNil(try BeginRegistrationRequest(serializedBytes: []).mode, "unset reads as nil")

        // Field 5 (mode) = 7, a number this program does not know: unset, not an error.
        XCTAssertNil(try BeginRegistrationRequest(serializedBytes: [0x28, 0x07]).mode)
        // Field 2 was the mode as text; a sender that still writes it is read without the field.
        let old: [UInt8] = [0x12, 0x0B] + Array("conditional".utf8)
        XCTAssertNil(try BeginRegistrationRequest(serializedBytes: old).mode)
    }

    /// A method served or called with another message type must not compile: snippets are type-checked against the
    /// built modules, one that uses the contracts rightly and one that mixes them up.
    func testAMethodWithTheWrongMessageTypesDoesNotCompile() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let build = root.appendingPathComponent(".build/debug")
        guard
            FileManager.default.fileExists(
                atPath: build.appendingPathComponent("Modules/ServiceContracts.swiftmodule").path)
        else { throw XCTSkip("no debug build at \(build.path)") }
        let right = """
            import GRPC
            import ServiceContracts
            func call(_ caller: some GRPCUnaryCaller) async throws {
                let _: BeginAuthenticationResponse = try await ChallengeServiceClient(caller)
                    .beginAuthentication(BeginAuthenticationRequest())
                let _: BeginAuthenticationResponse = try await caller.call(
                    ChallengeServiceMethods.beginAuthentication, BeginAuthenticationRequest(), idempotent: false)
            }
            """
        let wrong = """
            import GRPC
            import ServiceContracts
            func wrongRequest(_ caller: some GRPCUnaryCaller) async throws {
                _ = try await caller.call(ChallengeServiceMethods.beginRegistration, BeginAuthenticationRequest(), idempotent: false)
            }
            func wrongResponse(_ caller: some GRPCUnaryCaller) async throws {
                let _: SessionInfo = try await caller.call(ChallengeServiceMethods.beginAuthentication, BeginAuthenticationRequest(), idempotent: false)
            }
            func wrongClientRequest(_ caller: some GRPCUnaryCaller) async throws {
                _ = try await SessionServiceClient(caller).validateSession(BeginAuthenticationRequest())
            }
            struct WrongHandler: GRPCServerInterceptor {
                func intercept<Request, Response>(
                    _ request: Request, context: ServerContext, method: GRPCMethodDescriptor<Request, Response>,
                    next: @Sendable (Request, ServerContext) async throws -> Response
                ) async throws -> Response { try await next(request, context) }
                func register(_ server: GRPCServer) {
                    server.register(GRPCUnaryMethod(SessionServiceMethods.validateSession, interceptors: [self]) { (_: ValidateSessionRequest, _) in IssuedSession() })
                }
            }
            """
        let rightOutput = try typecheck(right, build: build, root: root)
        XCTAssertEqual(rightOutput.status, 0, rightOutput.text)
        let wrongOutput = try typecheck(wrong, build: build, root: root)
        XCTAssertNotEqual(wrongOutput.status, 0)
        for line in [4, 7, 10, 18] {
            XCTAssertTrue(
                wrongOutput.text.contains("snippet.swift:\(line):"), "line \(line) compiled:\n\(wrongOutput.text)")
        }
    }

    private func typecheck(_ source: String, build: URL, root: URL) throws -> (status: Int32, text: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("contracts-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("snippet.swift")
        try source.write(to: file, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "swiftc", "-typecheck", "-I", build.appendingPathComponent("Modules").path,
            "-Xcc", "-fmodule-map-file=\(root.path)/Shared/System/COpenSSL/module.modulemap",
            "-Xcc", "-fmodule-map-file=\(root.path)/Shared/System/CNGHTTP2/module.modulemap",
            "-Xcc", "-fmodule-map-file=\(build.path)/CNetworkIO.build/module.modulemap",
            "-Xcc", "-I\(root.path)/Shared/System/CNetworkIO/include", file.path,
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = "/opt/swift/usr/bin:" + (environment["PATH"] ?? "/usr/bin:/bin")
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
