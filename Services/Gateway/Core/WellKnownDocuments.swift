import Configuration
import JSON

/// The association files the platforms fetch, built from configuration.
public enum WellKnownDocuments {
    /// Every association file `configuration` serves, serialized once, by path.
    static func served(by configuration: GatewayConfiguration) -> [String: [UInt8]] {
        var documents: [String: [UInt8]] = [
            "/.well-known/apple-app-site-association": appleAppSiteAssociation(appIDs: configuration.appleAppIDs)
                .serialized(),
            "/.well-known/assetlinks.json": assetLinks(apps: configuration.androidApps).serialized(),
            "/.well-known/webauthn": relatedOrigins(origins: configuration.webAuthnOrigins).serialized(),
        ]
        if let endpoints = passkeyEndpoints(origins: configuration.origins, pages: configuration.passkeyPages) {
            documents["/.well-known/passkey-endpoints"] = endpoints.serialized()
        }
        return documents
    }

    /// `/.well-known/apple-app-site-association`: `{"webcredentials": {"apps": [TEAMID.bundle.id, ...]}}`.
    public static func appleAppSiteAssociation(appIDs: [String]) -> JSONValue {
        ["webcredentials": ["apps": .array(appIDs.map { .string($0) })]]
    }

    /// The Digital Asset Links relations each configured app is granted: using the site's credentials (passkeys
    /// through Credential Manager) and handling its links.
    public static let assetLinkRelations = [
        "delegate_permission/common.get_login_creds", "delegate_permission/common.handle_all_urls",
    ]

    /// `/.well-known/assetlinks.json`: for each package, one statement per relation of ``assetLinkRelations``, each
    /// with every fingerprint configured for the package (a package given twice is merged). One relation a
    /// statement: readers that take the first statement of a package as its credential grant find
    /// `get_login_creds` there.
    public static func assetLinks(apps: [AndroidApp]) -> JSONValue {
        var packages: [String] = []
        var fingerprints: [String: [String]] = [:]
        for app in apps {
            if fingerprints[app.packageName] == nil { packages.append(app.packageName) }
            for fingerprint in app.sha256Fingerprints
            where !fingerprints[app.packageName, default: []].contains(fingerprint) {
                fingerprints[app.packageName, default: []].append(fingerprint)
            }
        }
        return .array(
            packages.flatMap { package in
                assetLinkRelations.map { relation -> JSONValue in
                    [
                        "relation": [.string(relation)],
                        "target": [
                            "namespace": "android_app",
                            "package_name": .string(package),
                            "sha256_cert_fingerprints": .array((fingerprints[package] ?? []).map { .string($0) }),
                        ],
                    ]
                }
            })
    }

    /// The web origins (http and https) among the configured origins, each once, in order; app origins are left out.
    public static func webOrigins(_ origins: [String]) -> [String] {
        var seen: Set<String> = []
        return origins.filter { ConfigurationValues.host(ofWebOrigin: $0) != nil && seen.insert($0).inserted }
    }

    /// `/.well-known/webauthn`: the related origins, the web origins among `origins` (each once).
    public static func relatedOrigins(origins: [String]) -> JSONValue {
        ["origins": .array(webOrigins(origins).map { .string($0) })]
    }

    /// `/.well-known/passkey-endpoints`: the enroll and manage pages, each an absolute URL as configured or a path
    /// on the first web origin; nil when a page is a path and there is no web origin to put it on.
    public static func passkeyEndpoints(origins: [String], pages: PasskeyEndpointPages = PasskeyEndpointPages())
        -> JSONValue?
    {
        let origin = webOrigins(origins).first
        guard let enroll = PasskeyEndpointPages.resolve(pages.enroll, origin: origin),
            let manage = PasskeyEndpointPages.resolve(pages.manage, origin: origin)
        else { return nil }
        return ["enroll": .string(enroll), "manage": .string(manage)]
    }
}
