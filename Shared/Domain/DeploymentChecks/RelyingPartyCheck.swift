import Configuration
import PublicSuffixes

/// The relying party ID against where the files were fetched and against every configured web origin: a browser
/// runs a ceremony only where the origin's host is the RP ID or under it (or a related origin), and the platforms
/// fetch the association files from the RP ID's own host on port 443.
enum RelyingPartyCheck {
    static let name = "relying-party"

    static func findings(host: String, port: Int, expectation: DeploymentExpectation) -> [DeploymentFinding] {
        var findings: [DeploymentFinding] = []
        let id = expectation.relyingPartyID
        if !isRegistrable(id) {
            let why =
                PublicSuffixList.shipped?.isListedPublicSuffix(id) == true
                ? "is a public suffix (Public Suffix List), not a registrable domain" : "is not a registrable domain"
            findings.append(
                .failure(
                    name, .relyingPartyNotRegistrable,
                    "the relying party ID \(id) \(why): devices make no passkey for it",
                    fix: "set PASSKEY_RP_ID to your domain (example.com) before the first passkey is made"))
        }
        if host != id {
            findings.append(
                .failure(
                    name, .hostIsNotRelyingParty,
                    "the files were fetched from \(host), but devices fetch them from the relying party ID's host \(id); a file on another host (even www.\(id) or a parent) does nothing for it",
                    fix: "serve /.well-known/ at https://\(id)/ and run the doctor against https://\(id)"))
        }
        if port != 443 {
            findings.append(
                .warning(
                    name, .nonStandardPort, "checked on port \(port); devices fetch the files from port 443 only",
                    fix: "run the doctor against https://\(host) for the devices' view"))
        }
        for origin in expectation.origins where ConfigurationValues.host(ofWebOrigin: origin) != nil {
            guard !OriginChecks.isWithin(origin: origin, relyingPartyID: id),
                !expectation.relatedOrigins.contains(origin)
            else { continue }
            findings.append(
                .failure(
                    name, .originOutsideRelyingParty,
                    "\(origin) is neither \(id) nor under it, and is not a related origin: browsers refuse a ceremony there",
                    fix: "use an origin on \(id) or a subdomain, or list it in PASSKEY_RELATED_ORIGINS"))
        }
        if findings.isEmpty {
            findings.append(.passed(name, "\(id) is the host checked and every web origin is on it or related to it"))
        }
        return findings
    }

    /// A name a passkey can be made for on the web: a domain of two labels or more, not `localhost` or a name under
    /// it, not an IP address, and not a public suffix (`co.uk`, `github.io`) by the Public Suffix List (without the
    /// list, nothing is).
    static func isRegistrable(_ id: String) -> Bool {
        let labels = id.split(separator: ".", omittingEmptySubsequences: false)
        let numeric = labels.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
        return labels.count >= 2 && !numeric && labels.last != "localhost"
            && ConfigurationValues.isValidHostName(id) && PublicSuffixList.shipped?.registrableDomain(of: id) != nil
    }
}
