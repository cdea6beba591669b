import Configuration
import IPAddresses
import JSON
import PublicSuffixes

/// `/.well-known/webauthn`: the related origins (WebAuthn Level 3 §5.11) a browser reads before it runs a ceremony
/// for the RP ID on an origin outside it. A browser takes the origins in order and stops counting new registrable
/// domains at five: an origin of a sixth is ignored.
enum RelatedOriginsCheck {
    static let file = WellKnownFile.relatedOrigins
    /// The most registrable-domain labels a browser takes from the file (§5.11.1, maxLabels).
    static let labelLimit = 5
    /// The most origins read from the file.
    static let originLimit = 1000

    static func findings(_ fetched: FetchedDocument, expectation: DeploymentExpectation) -> [DeploymentFinding] {
        let name = file.rawValue
        let needed = expectation.relatedOrigins
        var (document, findings) = file.document(
            fetched, required: !needed.isEmpty,
            missingFix:
                "route \(file.path) from the relying party ID's host to the gateway, which serves PASSKEY_RELATED_ORIGINS there"
        )
        guard let document else { return findings }
        guard let entries = document["origins"]?.arrayValue, entries.count <= originLimit,
            entries.allSatisfy({ $0.stringValue != nil })
        else {
            findings.append(
                .failure(
                    name, .malformed, "\(file.path) has no origins list of strings (at most \(originLimit))",
                    fix: "serve {\"origins\": [\"https://...\"]}: route \(file.path) to the gateway"))
            return findings
        }
        let served = entries.compactMap(\.stringValue)
        for origin in needed where !served.contains(origin) {
            findings.append(
                .failure(
                    name, .originMissing,
                    "\(file.path) does not list \(origin), so browsers refuse a ceremony there for \(expectation.relyingPartyID)",
                    fix: "add \(origin) to PASSKEY_RELATED_ORIGINS on the gateway serving this host"))
        }
        let ignored = originsBeyondLabelLimit(served)
        for origin in ignored {
            let configured = needed.contains(origin)
            let problem =
                "\(WellKnownFile.clip(origin)) comes after \(labelLimit) registrable domains in \(file.path): browsers ignore it"
            let fix = "keep the origins to \(labelLimit) registrable domains, the ones in use first"
            findings.append(
                configured
                    ? .failure(name, .beyondLabelLimit, problem, fix: fix)
                    : .warning(name, .beyondLabelLimit, problem, fix: fix))
        }
        if findings.allSatisfy({ $0.severity == .passed }) {
            findings.append(.passed(name, "\(file.path) lists \(served.count) origin\(served.count == 1 ? "" : "s")"))
        }
        return findings
    }

    /// The origins a browser skips: those of a registrable domain first seen after `labelLimit` others (an origin
    /// with no registrable domain, such as an IP address, is not counted).
    static func originsBeyondLabelLimit(_ origins: [String]) -> [String] {
        var labels: [String] = []
        var ignored: [String] = []
        for origin in origins {
            guard let host = ConfigurationValues.host(ofWebOrigin: origin), let label = registrableLabel(of: host)
            else { continue }
            if labels.contains(label) { continue }
            if labels.count >= labelLimit {
                ignored.append(origin)
            } else {
                labels.append(label)
            }
        }
        return ignored
    }

    /// The registrable origin label of §5.11.1: the first label of the host's registrable domain by the Public
    /// Suffix List (`shop` for `www.shop.example.co.uk`); nil for an IP address, a public suffix itself, or without
    /// the list.
    static func registrableLabel(of host: String) -> String? {
        guard IPAddress(parsing: host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host) == nil,
            let domain = PublicSuffixList.shipped?.registrableDomain(of: host)
        else { return nil }
        return domain.split(separator: ".").first.map(String.init)
    }
}
