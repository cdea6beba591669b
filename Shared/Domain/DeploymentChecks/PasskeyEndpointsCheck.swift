import Configuration
import JSON

/// `/.well-known/passkey-endpoints` (W3C Passkey Endpoints): where password managers send people to add a passkey
/// (`enroll`) and to manage them (`manage`). Optional: without it nothing breaks, managers only cannot link there.
enum PasskeyEndpointsCheck {
    static let file = WellKnownFile.passkeyEndpoints

    static func findings(_ fetched: FetchedDocument, expectation: DeploymentExpectation) -> [DeploymentFinding] {
        let name = file.rawValue
        if case .response(let status, _, _, _, _) = fetched, status == 404 {
            return [
                .warning(
                    name, .notFound, "\(file.path) is not served: password managers cannot link to your passkey pages",
                    fix: "route \(file.path) to the gateway (PASSKEY_ENROLL_PAGE, PASSKEY_MANAGE_PAGE)")
            ]
        }
        var (document, findings) = file.document(fetched, required: true, missingFix: "")
        guard let document else { return findings }
        let origin = expectation.origins.first { ConfigurationValues.host(ofWebOrigin: $0) != nil }
        for (member, page) in [
            ("enroll", expectation.passkeyPages.enroll), ("manage", expectation.passkeyPages.manage),
        ] {
            guard let served = document[member]?.stringValue,
                served.hasPrefix("https://") || served.hasPrefix("http://localhost")
            else {
                findings.append(
                    .failure(
                        name, .malformed, "\(file.path) has no \(member) URL",
                        fix:
                            "serve {\"enroll\": \"https://...\", \"manage\": \"https://...\"}: route \(file.path) to the gateway"
                    ))
                continue
            }
            if let expected = PasskeyEndpointPages.resolve(page, origin: origin), expected != served {
                findings.append(
                    .warning(
                        name, .endpointMismatch,
                        "\(file.path) sends \(member) to \(WellKnownFile.clip(served)), not \(expected) as configured",
                        fix: "check PASSKEY_\(member.uppercased())_PAGE on the gateway serving this host"))
            }
        }
        if findings.allSatisfy({ $0.severity == .passed }) {
            findings.append(.passed(name, "\(file.path) names the enroll and manage pages"))
        }
        return findings
    }
}
