import JSON

/// `apple-app-site-association`: the `webcredentials` apps iOS reads before it shows a passkey sheet for the RP ID.
enum AppleAppSiteAssociationCheck {
    static let file = WellKnownFile.appleAppSiteAssociation
    /// The most app IDs read from the file.
    static let appLimit = 1000

    static func findings(_ fetched: FetchedDocument, appIDs: [String]) -> [DeploymentFinding] {
        let name = file.rawValue
        let configure = "set PASSKEY_APPLE_APP_IDS (TEAMID.bundle.id) and route \(file.path) to the gateway"
        var (document, findings) = file.document(fetched, required: !appIDs.isEmpty, missingFix: configure)
        guard let document else { return findings }
        guard let apps = document["webcredentials"]?["apps"]?.arrayValue, apps.count <= appLimit,
            apps.allSatisfy({ $0.stringValue != nil })
        else {
            let problem = "\(file.path) has no webcredentials.apps list of app IDs (at most \(appLimit))"
            findings.append(
                appIDs.isEmpty
                    ? .passed(name, problem + "; no iOS app is configured", code: .notChecked)
                    : .failure(
                        name, .malformed, problem,
                        fix: "serve {\"webcredentials\": {\"apps\": [\"TEAMID.bundle.id\"]}}: \(configure)"))
            return findings
        }
        let served = apps.compactMap(\.stringValue)
        for id in appIDs where !served.contains(id) {
            findings.append(
                .failure(
                    name, .appIDMissing,
                    "\(file.path) does not list \(id) in webcredentials.apps (it lists \(Self.list(served)))",
                    fix: "add \(id) to PASSKEY_APPLE_APP_IDS on the gateway that serves this host"))
        }
        for id in served where !appIDs.contains(id) {
            findings.append(
                .warning(
                    name, .appIDNotConfigured,
                    "\(file.path) lists \(WellKnownFile.clip(id)), which PASSKEY_APPLE_APP_IDS here does not",
                    fix: "check the doctor's configuration (--env-file) is the deployment's, or remove the app"))
        }
        if findings.allSatisfy({ $0.severity == .passed }) {
            findings.append(.passed(name, "\(file.path) lists \(Self.list(served))"))
        }
        return findings
    }

    static func list(_ ids: [String]) -> String {
        ids.isEmpty
            ? "none"
            : ids.prefix(5).map { WellKnownFile.clip($0, 80) }.joined(separator: ", ")
                + (ids.count > 5 ? " and \(ids.count - 5) more" : "")
    }
}
