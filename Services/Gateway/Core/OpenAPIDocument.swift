import Foundation

/// The OpenAPI 3.1 description of the gateway's API: `openapi.json` among the module's resources, served at
/// `/openapi.json` byte for byte. The tests check that it describes every route, and the contract suite
/// (`Tests/Contract`) that the running gateway does what it says.
public enum OpenAPIDocument {
    /// The document's bytes; empty when the resource is missing from this installation (``Gateway`` then refuses
    /// to start).
    public static let bytes: [UInt8] = (try? load()) ?? []

    /// Reads the document from the module's resources.
    static func load() throws -> [UInt8] {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json") else {
            throw CocoaError(.fileNoSuchFile)
        }
        return Array(try Data(contentsOf: url))
    }
}
