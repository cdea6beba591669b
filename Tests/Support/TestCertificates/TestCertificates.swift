import Foundation
import Synchronization

/// The CA and per-process certificates of mutual TLS, made once per test run by deploy/local/certificates.sh (as
/// `deploy/local/run` makes them).
public struct TestCertificates: Sendable {
    /// Where the files are: `ca.pem`, and `<name>.pem` + `<name>.key` per process.
    public let directory: String

    private static let made = Mutex<Result<TestCertificates, TestCertificatesError>?>(nil)

    /// The set of this test process, made at the first call.
    public static func shared() throws -> TestCertificates {
        try made.withLock { cached in
            if let cached { return try cached.get() }
            let result = Result { () throws(TestCertificatesError) -> TestCertificates in try make() }
            cached = result
            return try result.get()
        }
    }

    private static func make() throws(TestCertificatesError) -> TestCertificates {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().path
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "passkey-test-tls-\(UUID().uuidString)"
        ).path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [
            "-c", "set -euo pipefail; source \"$1/deploy/local/certificates.sh\"; make_grpc_certificates \"$2\"",
            "bash",
            root, directory,
        ]
        let errors = Pipe()
        process.standardError = errors
        do { try process.run() } catch { throw TestCertificatesError(message: "cannot run bash: \(error)") }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw TestCertificatesError(message: "deploy/local/certificates.sh failed: \(text)")
        }
        return TestCertificates(directory: directory)
    }

    /// The `GRPC_TLS_*` variables of process `name`.
    public func environment(for name: String) -> [String: String] {
        [
            "GRPC_TLS_CERTIFICATE": "\(directory)/\(name).pem", "GRPC_TLS_KEY": "\(directory)/\(name).key",
            "GRPC_TLS_CA": "\(directory)/ca.pem", "GRPC_TRUST_DOMAIN": "passkey.internal",
        ]
    }
}

/// The certificates could not be made.
public struct TestCertificatesError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
}
