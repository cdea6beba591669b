import Foundation
import PasskeyClient
import PostgresTestSupport
import SoftwareAuthenticator
import WebAuthn
import XCTest

/// An offline FIDO metadata BLOB against the real executables: the models it reports compromised cannot register,
/// a bad BLOB stops verification-service at start with the reason, and on reload a bad BLOB is logged while the last
/// good one stays in force.
final class MetadataBLOBFlowTests: XCTestCase {
    static let revoked = AAGUID(bytes: Array(repeating: 0x11, count: 16))
    static let compromised = AAGUID(bytes: Array(repeating: 0x12, count: 16))
    static let certified = AAGUID(bytes: Array(repeating: 0x22, count: 16))
    let maker = MetadataBLOBMaker(notBefore: Int64(Date().timeIntervalSince1970) - 86_400)

    func day(_ offset: TimeInterval) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        return formatter.string(from: Date().addingTimeInterval(offset))
    }

    func payload(number: Int, revokedStatus: String = "REVOKED", nextUpdate: String? = nil) -> String {
        MetadataBLOBMaker.payload(
            number: number, nextUpdate: nextUpdate ?? day(30 * 86_400),
            entries: [
                (Self.revoked, [("FIDO_CERTIFIED", "2020-01-01"), (revokedStatus, day(-86_400))]),
                (Self.compromised, [("USER_KEY_PHYSICAL_COMPROMISE", "2024-01-01")]),
                (Self.certified, [("FIDO_CERTIFIED_L2", "2022-01-01")]),
            ])
    }

    /// Writes a file by renaming a complete copy over it, as a deployment's config sync does.
    func write(_ bytes: [UInt8], to url: URL) throws {
        let temporary = url.appendingPathExtension("new")
        try Data(bytes).write(to: temporary)
        guard rename(temporary.path, url.path) == 0 else { throw StackError(message: "rename \(url.path) failed") }
    }

    func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("passkey-mds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }

    func register(_ flows: Flows, _ client: PasskeyAPIClient, _ model: AAGUID) async throws -> Outcome<NoContent> {
        let start = await flows.beginRegistration(client)
        XCTAssertEqual(start.status, 200, start.description)
        return await flows.finishRegistration(
            client, start: try start.get(), authenticator: SoftwareAuthenticator(aaguid: model))
    }

    func testCompromisedModelsAreRefusedAndAFailedReloadKeepsTheLastGoodBLOB() async throws {
        let folder = try directory()
        let blobURL = folder.appendingPathComponent("blob.jwt")
        let rootURL = folder.appendingPathComponent("root.pem")
        try write(maker.blob(payload: payload(number: 1)), to: blobURL)
        try write(Array(maker.rootPEM.utf8), to: rootURL)
        let stack = try await Stack(environment: [
            "PASSKEY_MDS_BLOB": blobURL.path, "PASSKEY_MDS_ROOT": rootURL.path, "PASSKEY_MDS_RELOAD_INTERVAL": "300ms",
        ])
        addTeardownBlock { await stack.tearDown() }
        let flows = Flows(stack)
        let user = try await flows.passwordUser()
        for model in [Self.revoked, Self.compromised] {
            let refused = try await register(flows, user.client, model)
            XCTAssertEqual(refused.status, 400, refused.description)
            XCTAssertEqual(refused.reason, .attestationUntrusted)
        }
        await assertEqual(try await register(flows, user.client, Self.certified).status, 204)
        XCTAssertTrue(stack.verification[0].log.contains("event=mds.loaded"))

        // Bad BLOBs on reload: each is logged with its reason, and the last good one stays in force.
        for (bytes, reason) in [
            (
                maker.blob(
                    payload: payload(number: 2, revokedStatus: "FIDO_CERTIFIED"), signer: SigningKey(algorithm: .rs256)),
                "badly signed"
            ),
            (maker.blob(payload: payload(number: 2, revokedStatus: "FIDO_CERTIFIED"), signed: false), "unsigned"),
            (
                maker.blob(payload: payload(number: 2, revokedStatus: "FIDO_CERTIFIED", nextUpdate: day(-2 * 86_400))),
                "expired"
            ),
            (Array("{not a jws".utf8), "malformed"),
            (maker.blob(payload: payload(number: 0, revokedStatus: "FIDO_CERTIFIED")), "no 0 is older than 1"),
        ] {
            try write(bytes, to: blobURL)
            XCTAssertTrue(
                waitUntil(timeout: 10) { stack.verification[0].log.contains(reason) },
                "no reload_failed line with \(reason):\n\(stack.verification[0].log)")
            let stillRefused = try await register(flows, user.client, Self.revoked)
            XCTAssertEqual(stillRefused.reason, .attestationUntrusted, reason)
        }
        XCTAssertTrue(stack.verification[0].log.contains("event=mds.reload_failed"))

        // A good BLOB in which the model is certified again takes over.
        try write(maker.blob(payload: payload(number: 3, revokedStatus: "FIDO_CERTIFIED")), to: blobURL)
        XCTAssertTrue(waitUntil(timeout: 10) { stack.verification[0].log.contains("event=mds.reloaded no=3") })
        await assertEqual(try await register(flows, user.client, Self.revoked).status, 204)
        let stillCompromised = try await register(flows, user.client, Self.compromised)
        XCTAssertEqual(stillCompromised.reason, .attestationUntrusted)
    }

    func testABadBLOBOrRootStopsVerificationServiceWithTheReason() async throws {
        let stack = try await WebAuthnPolicyTests.standard.get()
        let folder = try directory()
        let rootURL = folder.appendingPathComponent("root.pem")
        try write(Array(maker.rootPEM.utf8), to: rootURL)
        let otherRoot = folder.appendingPathComponent("other.pem")
        try write(Array(MetadataBLOBMaker(notBefore: 0).rootPEM.utf8), to: otherRoot)
        let notPEM = folder.appendingPathComponent("not.pem")
        try write(Array("hello".utf8), to: notPEM)
        let good = maker.blob(payload: payload(number: 1))
        let cases: [(blob: [UInt8]?, root: URL?, variable: String, reason: String)] = [
            (maker.blob(payload: payload(number: 1), signed: false), rootURL, "PASSKEY_MDS_BLOB", "unsigned"),
            (
                maker.blob(payload: payload(number: 1), signer: SigningKey(algorithm: .rs256)), rootURL,
                "PASSKEY_MDS_BLOB", "badly signed"
            ),
            (good, otherRoot, "PASSKEY_MDS_BLOB", "badly signed"),
            (
                maker.blob(payload: payload(number: 1, nextUpdate: day(-2 * 86_400))), rootURL, "PASSKEY_MDS_BLOB",
                "expired"
            ),
            (Array("a.b.c".utf8), rootURL, "PASSKEY_MDS_BLOB", "malformed"),
            (nil, rootURL, "PASSKEY_MDS_BLOB", "cannot read"),
            (good, notPEM, "PASSKEY_MDS_ROOT", "the root file holds no PEM certificate"),
            (good, nil, "PASSKEY_MDS_ROOT", "must be set together"),
        ]
        for (index, testCase) in cases.enumerated() {
            let blobURL = folder.appendingPathComponent("blob-\(index).jwt")
            if let bytes = testCase.blob { try write(bytes, to: blobURL) }
            var environment = stack.environment
            environment["PASSKEY_MDS_BLOB"] = blobURL.path
            environment["PASSKEY_MDS_ROOT"] = testCase.root?.path ?? ""
            environment["VERIFICATION_SERVICE_LISTEN"] = "127.0.0.1:\(freePort())"
            environment["GRPC_PLAINTEXT"] = "true"
            let process = ManagedProcess(
                executable: "verification-service", environment: environment, logDirectory: stack.logDirectory)
            try process.start()
            XCTAssertTrue(waitUntil(timeout: 20) { !process.isRunning }, "kept running: \(testCase.reason)")
            XCTAssertEqual(process.terminate(), 2, process.log)
            XCTAssertTrue(process.log.contains(testCase.variable), process.log)
            XCTAssertTrue(process.log.contains(testCase.reason), "\(testCase.reason): \(process.log)")
        }
    }
}
