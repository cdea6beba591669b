import Configuration
import Foundation
import HTTPMessages

/// The demo page at `/` and the web module it is built on (`/passkey/v1/passkey.js`, with its types): plain HTML,
/// CSS and JavaScript shipped beside the module, served with a strict
/// content security policy (everything from this origin, nothing inline, no framing). The same page is served at
/// ``sections``, the enroll and manage pages `/.well-known/passkey-endpoints` names by default; it opens on the
/// section its path names.
struct WebPage: ListenerPages {
    private let assets: [String: HTTPResponse]

    /// Loads the page's files from the module's resources; an installation without them serves no page.
    init() {
        var assets: [String: HTTPResponse] = [:]
        for (path, file, type) in [
            ("/", "index.html", "text/html; charset=utf-8"), ("/app.js", "app.js", "text/javascript; charset=utf-8"),
            ("/app.css", "app.css", "text/css; charset=utf-8"),
            ("/recovery.js", "recovery.js", "text/javascript; charset=utf-8"),
            (Self.modulePath, "passkey.js", "text/javascript; charset=utf-8"),
            (Self.moduleTypesPath, "passkey.d.ts", "application/typescript; charset=utf-8"),
        ] {
            guard let url = Bundle.module.url(forResource: file, withExtension: nil, subdirectory: "Web"),
                let contents = try? Data(contentsOf: url)
            else { continue }
            assets[path] = HTTPResponse(
                status: 200,
                headers: HTTPHeaders([
                    ("content-type", type), ("cache-control", "no-cache"),
                    (
                        "content-security-policy",
                        "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
                    ),
                    ("referrer-policy", "no-referrer"),
                ]),
                body: Array(contents))
            // The web module may be imported by a page of any origin (its file is public and carries no
            // credentials), which a cross-origin module script needs.
            if path.hasPrefix(Self.moduleDirectory) { assets[path]?.headers.set("access-control-allow-origin", "*") }
        }
        if let page = assets["/"] {
            for section in Self.sections { assets[section] = page }
        }
        self.assets = assets
    }

    /// Where the web module's version 1 is served (`passkey.js`, an ES module) and its types (`passkey.d.ts`).
    static let moduleDirectory = "/passkey/v1/"
    static let modulePath = moduleDirectory + "passkey.js"
    static let moduleTypesPath = moduleDirectory + "passkey.d.ts"

    /// The paths that serve the page open on one of its sections.
    static let sections = [PasskeyEndpointPages.defaultEnroll, PasskeyEndpointPages.defaultManage]

    /// The file for a GET or HEAD of `path`, if it is one of the page's.
    func response(method: String, path: String) -> HTTPResponse? {
        guard method == "GET" || method == "HEAD" else { return nil }
        return assets[path]
    }

    /// Whether `path` is one of the page's files (served to GET and HEAD only).
    func serves(_ path: String) -> Bool { assets[path] != nil }
}
