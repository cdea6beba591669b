import Crypto
import Encoding
import Foundation
import HTTPMessages

/// The operators' page at `/admin/` on the admin listener only: one self-contained HTML file (`admin-page.html`,
/// its script and style inline) that calls the admin API with a token the operator pastes. Its content security
/// policy allows exactly its own inline script and style (by their SHA-256) and calls to its own origin; nothing
/// else loads, nothing frames it.
struct AdminPage: ListenerPages {
    static let path = "/admin/"

    /// The page's response; nil when the resource is missing from this installation (no page is served).
    let response: HTTPResponse?

    init() {
        guard let url = Bundle.module.url(forResource: "admin-page", withExtension: "html"),
            let contents = try? Data(contentsOf: url), let text = String(data: contents, encoding: .utf8)
        else {
            response = nil
            return
        }
        response = HTTPResponse(
            status: 200,
            headers: HTTPHeaders([
                ("content-type", "text/html; charset=utf-8"),
                ("content-security-policy", Self.contentSecurityPolicy(for: text)),
                ("referrer-policy", "no-referrer"), ("x-frame-options", "DENY"),
                ("cross-origin-opener-policy", "same-origin"), ("cross-origin-resource-policy", "same-origin"),
            ]),
            body: Array(contents))
    }

    /// The page for a GET or HEAD of `path`, if `path` is the page's.
    func response(method: String, path: String) -> HTTPResponse? {
        guard path == Self.path, method == "GET" || method == "HEAD" else { return nil }
        return response
    }

    /// Whether `path` is the page's.
    func serves(_ path: String) -> Bool { path == Self.path }

    /// `default-src 'none'`, with the page's inline `<script>` and `<style>` elements allowed by their hashes and
    /// `fetch` to the page's own origin (the admin API).
    static func contentSecurityPolicy(for page: String) -> String {
        func hashes(of element: String) -> String {
            var sources: [String] = []
            var rest = Substring(page)
            while let open = rest.range(of: "<\(element)>"),
                let close = rest[open.upperBound...].range(of: "</\(element)>")
            {
                let body = rest[open.upperBound..<close.lowerBound]
                sources.append("'sha256-\(Base64URL.encodeStandard(sha256(Array(body.utf8))))'")
                rest = rest[close.upperBound...]
            }
            return sources.isEmpty ? "'none'" : sources.joined(separator: " ")
        }
        return "default-src 'none'; script-src \(hashes(of: "script")); style-src \(hashes(of: "style")); "
            + "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }
}
