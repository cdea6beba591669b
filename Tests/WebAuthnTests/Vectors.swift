import Crypto
import Encoding
import Foundation
import SoftwareAuthenticator
import WebAuthn

/// Reads the shared test vectors (never copied into the repository).
enum Vectors {
    /// `PASSKEY_VECTORS_DIR`, or `../shared/vectors` next to the package root.
    static var directory: URL { TestVectors.directory }

    static func load(_ name: String) throws -> [[String: Any]] { try TestVectors.load(name) }

    static func bytes(_ value: Any?) throws -> [UInt8] {
        guard let text = value as? String, let bytes = Base64URL.decode(text) else {
            throw VectorError("not base64url: \(String(describing: value))")
        }
        return bytes
    }

    static func origins(_ value: Any?) -> [String] {
        if let single = value as? String { return [single] }
        return value as? [String] ?? []
    }

    static func date(_ value: Any?) -> Date? {
        guard let text = value as? String else { return nil }
        return ISO8601DateFormatter().date(from: text)
    }

    static func certificates(_ value: Any?) throws -> [Certificate] {
        try (value as? [String] ?? []).map { try Certificate(pemEncoded: $0) }
    }

    /// The outcome a verifier built on this machine's OpenSSL must give: (success?, reason code when failing).
    static func expectedOutcome(_ vector: [String: Any]) -> (success: Bool, code: String?) {
        if vector["requires"] != nil {
            return (
                vector["expectWithoutRequired"] as? String == "success",
                vector["expectedFailureWithoutRequired"] as? String
            )
        }
        return (vector["expect"] as? String == "success", nil)
    }
}

struct VectorError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
