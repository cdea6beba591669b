import Crypto
import Encoding
import Foundation
import HTTPMessages
import JSON
import PasskeyProviders

/// The passkey providers' names and icons (from the community AAGUID list): what `GET /v1/passkeys` shows beside
/// each passkey, and the icons it links to, served by the gateway so that pages and apps need no `data:` URIs.
struct ProviderDirectory: Sendable {
    let catalog: PasskeyProviderCatalog
    /// Each icon's response, built once, by `<aaguid>/<variant>`.
    private let icons: [String: HTTPResponse]

    /// How long clients and caches may keep an icon: a day (the list changes only with a new release).
    static let iconCacheControl = "public, max-age=86400"

    init(catalog: PasskeyProviderCatalog) {
        self.catalog = catalog
        var icons: [String: HTTPResponse] = [:]
        for aaguid in catalog.aaguids {
            guard let provider = catalog.provider(for: aaguid) else { continue }
            for variant in ProviderIcon.Variant.allCases {
                guard let icon = provider.icon(variant) else { continue }
                icons[Self.key(aaguid.lowercaseText, variant)] = HTTPResponse(
                    status: 200,
                    headers: HTTPHeaders([
                        ("content-type", icon.mediaType), ("cache-control", Self.iconCacheControl),
                        ("etag", "\"" + Hex.encode(Array(sha256(icon.bytes).prefix(16))) + "\""),
                        // An SVG opened on its own is a document of this origin: no script, no fetch, its own origin.
                        ("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox"),
                        ("cross-origin-resource-policy", "cross-origin"),
                    ]),
                    body: icon.bytes)
            }
        }
        self.icons = icons
    }

    private static func key(_ aaguid: String, _ variant: ProviderIcon.Variant) -> String {
        aaguid + "/" + variant.rawValue
    }

    /// The path of an icon, relative to the gateway's base URL.
    static func iconPath(aaguid: String, variant: ProviderIcon.Variant) -> String {
        "/v1/passkey-providers/\(aaguid)/icons/\(variant.rawValue)"
    }

    /// The provider's name for this AAGUID, when the list has it.
    func name(aaguid: String) -> String? {
        catalog.provider(forText: aaguid.lowercased())?.name
    }

    /// The provider fields of one passkey in `GET /v1/passkeys`: `providerName`, `providerIconLight` and
    /// `providerIconDark`, each null when the AAGUID is not listed or the list has no such icon.
    func fields(aaguid: String) -> [(String, JSONValue)] {
        let canonical = aaguid.lowercased()
        let provider = catalog.provider(forText: canonical)
        func icon(_ variant: ProviderIcon.Variant) -> JSONValue {
            provider?.icon(variant) == nil ? .null : .string(Self.iconPath(aaguid: canonical, variant: variant))
        }
        return [
            ("providerName", provider.map { .string($0.name) } ?? .null),
            ("providerIconLight", icon(.light)), ("providerIconDark", icon(.dark)),
        ]
    }

    /// `GET /v1/passkey-providers/{aaguid}/icons/{variant}`: 400 for an AAGUID that is not a canonical UUID or a
    /// variant other than `light` and `dark`, 404 for an unlisted provider or one without that icon, 304 when the
    /// client's `If-None-Match` names the icon it has.
    func icon(aaguid: String, variant: String, ifNoneMatch: String?) throws(APIProblem) -> HTTPResponse {
        guard aaguid.utf8.count == 36, let uuid = UUID(text: aaguid) else {
            throw .invalidRequest("The AAGUID in the path must be a UUID (8-4-4-4-12 hex digits).")
        }
        guard let variant = ProviderIcon.Variant(rawValue: variant) else {
            throw .invalidRequest("The icon variant in the path must be light or dark.")
        }
        guard let response = icons[Self.key(uuid.lowercaseText, variant)] else { throw .notFound }
        if let ifNoneMatch, let etag = response.headers["etag"],
            ifNoneMatch.split(separator: ",").contains(where: {
                let tag = String($0).trimmingWhitespace()
                return tag == etag || tag == "W/" + etag || tag == "*"
            })
        {
            return HTTPResponse(
                status: 304, headers: HTTPHeaders([("cache-control", Self.iconCacheControl), ("etag", etag)]))
        }
        return response
    }
}

extension GatewayApplication {
    func providerIcon(_ context: PublicContext) throws(APIProblem) -> HTTPResponse {
        try providers.icon(
            aaguid: context.parameter("aaguid"), variant: context.parameter("variant"),
            ifNoneMatch: context.request.headers["if-none-match"])
    }
}
