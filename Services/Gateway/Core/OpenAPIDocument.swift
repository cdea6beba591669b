import Foundation

/// The OpenAPI 3.1 description of the gateway's API: `openapi.json` among the module's resources, served at
/// `/openapi.json` byte for byte. The tests check that it describes every route, and the contract suite
/// (`Tests/Contract`) that the running gateway does what it says.
public enum OpenAPIDocument {
    /// The document's bytes; empty when the resource is missing from this installation (``Gateway`` then refuses
    /// to start).
    public static let bytes: [UInt8] = (try? load()) ?? []

    /// Reads a document (`openapi`, `openapi-admin`) from the module's resources.
    static func load(_ name: String = "openapi") throws -> [UInt8] {
        guard let url = Bundle.module.url(forResource: name, withExtension: "json") else {
            throw CocoaError(.fileNoSuchFile)
        }
        return Array(try Data(contentsOf: url))
    }
}

/// The OpenAPI 3.1 description of the admin API: `openapi-admin.json` among the module's resources, served on the
/// admin listener at `/admin/v1/openapi.json` byte for byte.
public enum AdminOpenAPIDocument {
    /// The document's bytes; empty when the resource is missing (``Gateway`` then refuses to start an admin
    /// listener).
    public static let bytes: [UInt8] = (try? OpenAPIDocument.load("openapi-admin")) ?? []
}
