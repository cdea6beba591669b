import JSON

/// A file the platforms fetch from `https://<RP ID>/.well-known/`, and the response rules every one of them shares:
/// 200 at the exact path with no redirect (no platform follows one), `application/json`, within the size limit, a
/// JSON document.
public enum WellKnownFile: String, Sendable, CaseIterable {
    case appleAppSiteAssociation = "apple-app-site-association"
    case assetLinks = "assetlinks.json"
    case relatedOrigins = "webauthn"
    case passkeyEndpoints = "passkey-endpoints"

    /// The path fetched, on the RP ID's host.
    public var path: String { "/.well-known/" + rawValue }

    /// The largest body accepted: Apple's limit for `apple-app-site-association` (128 KB uncompressed), which is
    /// also this check's bound for the others.
    public static let sizeLimit = 128 * 1024

    /// Reads `fetched` as this file's JSON document, with a finding for each response rule it breaks; nil when there
    /// is no document to check further. `required` says whether a missing file breaks devices (it is configured) or
    /// is only worth a line.
    func document(_ fetched: FetchedDocument, required: Bool, missingFix: String) -> (JSONValue?, [DeploymentFinding]) {
        let name = rawValue
        switch fetched {
        case .failed(let reason):
            return (
                nil,
                [
                    .failure(
                        name, .unreachable, "\(path) could not be fetched: \(reason)",
                        fix: "serve \(path) over HTTPS at the relying party ID's host")
                ]
            )
        case .response(let status, let contentType, let location, let body, let exceededLimit):
            if (300..<400).contains(status) {
                return (
                    nil,
                    [
                        .failure(
                            name, .redirected,
                            "\(path) answers \(status), a redirect to \(location.map { Self.clip($0) } ?? "nowhere"); the platforms do not follow redirects",
                            fix:
                                "serve the file itself at exactly \(path) on the relying party ID's host (no redirect to www., to https:// or to another path)"
                        )
                    ]
                )
            }
            if status == 404 || status == 410 {
                let problem = "\(path) is not served (\(status))"
                return (
                    nil,
                    [
                        required
                            ? .failure(name, .notFound, problem, fix: missingFix)
                            : .passed(name, problem + "; nothing configured needs it", code: .notChecked)
                    ]
                )
            }
            guard status == 200 else {
                return (
                    nil,
                    [
                        .failure(
                            name, .unexpectedStatus, "\(path) answers \(status), not 200",
                            fix: "make \(path) answer 200 with the file")
                    ]
                )
            }
            var findings: [DeploymentFinding] = []
            let mediaType = contentType.map(Self.mediaType) ?? ""
            if mediaType != "application/json" {
                findings.append(
                    .failure(
                        name, .wrongContentType,
                        "\(path) is served as \(contentType.map { Self.clip($0) } ?? "no Content-Type"), not application/json",
                        fix:
                            "serve it with Content-Type: application/json (nginx: location = \(path) { default_type application/json; })"
                    ))
            }
            if exceededLimit || body.count > Self.sizeLimit {
                findings.append(
                    .failure(
                        name, .tooLarge,
                        "\(path) is larger than \(Self.sizeLimit / 1024) KB, which the platforms refuse",
                        fix: "list only the apps and origins in use"))
                return (nil, findings)
            }
            guard let document = try? JSONReader.parse(body) else {
                findings.append(
                    .failure(
                        name, .notJSON, "\(path) is not a JSON document",
                        fix: "serve the JSON the gateway writes (route \(path) to the gateway)"))
                return (nil, findings)
            }
            return (document, findings)
        }
    }

    /// The media type of a `Content-Type` value, lowercased, without its parameters.
    static func mediaType(_ value: String) -> String {
        String(value.split(separator: ";", maxSplits: 1).first ?? "").trimmingSpaces().lowercased()
    }

    /// Text from the server cut short and stripped of control characters for a one-line message.
    static func clip(_ text: String, _ limit: Int = 120) -> String {
        let shown = String(
            String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 }))
        return shown.count <= limit ? shown : String(shown.prefix(limit)) + "…"
    }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return String(text)
    }
}
