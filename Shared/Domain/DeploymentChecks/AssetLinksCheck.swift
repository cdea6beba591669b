import Configuration
import JSON

/// `assetlinks.json`: the Digital Asset Links statements Credential Manager reads before it lets an app use the RP
/// ID's passkeys: for each app a `delegate_permission/common.get_login_creds` statement naming its package and
/// every certificate it is signed with.
enum AssetLinksCheck {
    static let file = WellKnownFile.assetLinks
    static let loginCredentials = "delegate_permission/common.get_login_creds"
    static let handleAllURLs = "delegate_permission/common.handle_all_urls"
    /// The most statements read from the file.
    static let statementLimit = 1000

    /// One statement's grant: the relations, the package and the fingerprints (uppercased).
    struct Statement {
        var relations: [String]
        var package: String
        var fingerprints: [String]
    }

    static func findings(_ fetched: FetchedDocument, apps: [AndroidApp]) -> [DeploymentFinding] {
        let name = file.rawValue
        let configure = "set PASSKEY_ANDROID_APPS (package:SHA-256) and route \(file.path) to the gateway"
        var (document, findings) = file.document(fetched, required: !apps.isEmpty, missingFix: configure)
        guard let document else { return findings }
        guard let list = document.arrayValue, list.count <= statementLimit else {
            findings.append(
                .failure(
                    name, .malformed, "\(file.path) is not a list of statements (at most \(statementLimit))",
                    fix: "serve the gateway's [{\"relation\": [...], \"target\": {...}}]: \(configure)"))
            return findings
        }
        var statements: [Statement] = []
        for (index, entry) in list.enumerated() {
            guard let relations = entry["relation"]?.arrayValue?.compactMap(\.stringValue),
                let target = entry["target"],
                target["namespace"]?.stringValue == "android_app" || target["namespace"]?.stringValue == "web"
            else {
                findings.append(
                    .failure(
                        name, .malformed,
                        "statement \(index + 1) of \(file.path) has no relation list or target namespace",
                        fix: "serve the statements the gateway writes from PASSKEY_ANDROID_APPS"))
                continue
            }
            guard target["namespace"]?.stringValue == "android_app" else { continue }
            let package = target["package_name"]?.stringValue ?? ""
            let fingerprints = target["sha256_cert_fingerprints"]?.arrayValue?.compactMap(\.stringValue) ?? []
            for fingerprint in fingerprints where AndroidApp.origin(fingerprint: fingerprint) == nil {
                findings.append(
                    .failure(
                        name, .fingerprintMalformed,
                        "\(WellKnownFile.clip(package, 80)) in \(file.path) lists \(WellKnownFile.clip(fingerprint, 110)), which is not a SHA-256 fingerprint",
                        fix:
                            "list each certificate's SHA-256 as 32 colon-separated hex bytes, as keytool -list -v prints it"
                    ))
            }
            statements.append(
                Statement(
                    relations: relations, package: package, fingerprints: fingerprints.map { $0.uppercased() }))
        }
        for app in apps {
            let granting = statements.filter {
                $0.package == app.packageName && $0.relations.contains(loginCredentials)
            }
            guard !granting.isEmpty else {
                let named = statements.contains { $0.package == app.packageName }
                findings.append(
                    .failure(
                        name, named ? .relationMissing : .packageMissing,
                        named
                            ? "\(file.path) names \(app.packageName) but grants it no \(loginCredentials)"
                            : "\(file.path) has no statement for \(app.packageName)",
                        fix:
                            "serve the gateway's assetlinks.json, which grants \(loginCredentials) to every app of PASSKEY_ANDROID_APPS"
                    ))
                continue
            }
            let granted = Set(granting.flatMap(\.fingerprints))
            for fingerprint in app.sha256Fingerprints where !granted.contains(fingerprint) {
                findings.append(
                    .failure(
                        name, .fingerprintMissing,
                        "\(file.path) does not grant \(app.packageName) signed with \(fingerprint) (\(AndroidApp.origin(fingerprint: fingerprint) ?? ""))",
                        fix:
                            "add the fingerprint to \(app.packageName) in PASSKEY_ANDROID_APPS on the gateway serving this host (the app signing key from Play Console, the upload key, and on development deployments the debug key)"
                    ))
            }
            if !statements.contains(where: { $0.package == app.packageName && $0.relations.contains(handleAllURLs) }) {
                findings.append(
                    .warning(
                        name, .relationMissing,
                        "\(file.path) grants \(app.packageName) no \(handleAllURLs): its App Links will not verify",
                        fix: "serve the gateway's assetlinks.json, which grants both relations"))
            }
        }
        if findings.allSatisfy({ $0.severity == .passed }) {
            let packages = Set(statements.map(\.package)).sorted()
            findings.append(
                .passed(name, "\(file.path) grants \(packages.isEmpty ? "no app" : packages.joined(separator: ", "))"))
        }
        return findings
    }
}
