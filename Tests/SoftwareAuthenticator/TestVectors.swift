import Foundation

/// Where the shared WebAuthn test vectors are read from, in place (they are never copied into the repository).
public enum TestVectors {
    /// `PASSKEY_VECTORS_DIR`, or `../shared/vectors` next to the package root.
    public static var directory: URL {
        if let path = ProcessInfo.processInfo.environment["PASSKEY_VECTORS_DIR"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return packageRoot.deletingLastPathComponent().appendingPathComponent("shared/vectors")
    }

    /// The objects of one vector file (`registrations.json`, `authentications.json`).
    public static func load(_ name: String) throws -> [[String: Any]] {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        guard let list = try JSONSerialization.jsonObject(with: data) as? [[String: Any]] else {
            throw CocoaError(
                .fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "\(name) is not a list of objects"])
        }
        return list
    }
}
