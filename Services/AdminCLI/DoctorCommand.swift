import Configuration
import Crypto
import CurlTransport
import DeploymentChecks
import Foundation
import IPAddresses
import JSON

/// `passkey-admin doctor URL`: the deployment at `https://HOST[:PORT]` checked from the outside as devices see it
/// (``DeploymentDoctor``), against the configuration in `--env-file` (the deployment's own `KEY=VALUE` file) or,
/// without one, against the RP ID being the URL's host. `--address` connects to that address instead of resolving the
/// host (a deployment checked before its DNS points at it). Every fetch is bounded (128 KB, 10 s, no redirect
/// followed, `--timeout` seconds, 10 by default).
/// Exit statuses: 0 nothing failed (warnings allowed), 1 a check failed, 2 usage.
enum DoctorCommand {
    static func run(_ arguments: ArraySlice<String>) {
        let options = Options(
            arguments, valued: ["--env-file", "--ca-file", "--address", "--timeout"], flags: ["--json"])
        let url = options.positional(1...1, "doctor takes the deployment's public URL, like https://example.com")[0]
        let target: DoctorTarget
        do { target = try DoctorTarget(url: url) } catch { finish(.usage, "doctor: \(error.reason)") }
        let expectation: DeploymentExpectation
        if let path = options.values["--env-file"] {
            let values: [String: String]
            do { values = try EnvironmentFile.read(path: path) } catch {
                finish(.usage, "--env-file \(Printable.clip(path, 200)) \(error.reason)")
            }
            do { expectation = try DeploymentExpectation(EnvironmentReader(values)) } catch {
                finish(.usage, "--env-file \(Printable.clip(path, 200)): \(error)")
            }
        } else {
            expectation = DeploymentExpectation(relyingPartyID: target.host, origins: [target.origin])
        }
        if let caFile = options.values["--ca-file"], !FileManager.default.isReadableFile(atPath: caFile) {
            finish(.usage, "--ca-file \(Printable.clip(caFile, 200)) cannot be read")
        }
        let address = options.values["--address"].map { text in
            guard let address = IPAddress(parsing: text) else {
                finish(.usage, "--address must be an IPv4 or IPv6 address, like 203.0.113.7")
            }
            return address.description
        }
        let seconds = options.values["--timeout"].map { ArgumentCheck.integer($0, in: 1...60, "--timeout") } ?? 10
        let observed = observe(
            target, caFile: options.values["--ca-file"], address: address, timeout: .seconds(seconds))
        let findings = DeploymentDoctor.findings(
            host: target.host, port: target.port, expectation: expectation, certificate: observed.certificate,
            documents: observed.documents, now: Int64(Date().timeIntervalSince1970))
        if options.json {
            print(JSONWriter.string(DoctorReport.json(target: target, expectation: expectation, findings: findings)))
        } else {
            print(DoctorReport.text(target: target, expectation: expectation, findings: findings), terminator: "")
        }
        exit(findings.contains { $0.severity == .failure } ? Exit.failed.rawValue : Exit.done.rawValue)
    }

    /// The most header bytes kept from one response.
    static let headLimit = 64 * 1024

    /// Each well-known file as fetched, and the certificate. When the certificate is refused, that is reported and
    /// the files are fetched again without the check, so that their own problems show in the same run.
    static func observe(_ target: DoctorTarget, caFile: String?, address: String?, timeout: Duration) -> (
        certificate: ServedCertificate, documents: [WellKnownFile: FetchedDocument]
    ) {
        let client = HTTPClient()
        var certificate = ServedCertificate()
        var verifiesPeer = true
        var documents: [WellKnownFile: FetchedDocument] = [:]
        for file in WellKnownFile.allCases {
            // As a device's fetcher asks: no redirect followed (HTTPClient never follows one), no proxy, the body
            // kept up to the size limit and the rest reported as over it.
            var request = HTTPRequest(
                method: "GET", url: target.origin + file.path, headers: [], userAgent: "passkey-admin-doctor/1",
                host: target.host, port: target.port, addresses: address.map { [$0] } ?? [],
                connectTimeout: min(timeout, .seconds(5)), timeout: timeout, caFile: caFile, verifiesPeer: verifiesPeer,
                collectsCertificates: true, headLimit: Self.headLimit, bodyLimit: WellKnownFile.sizeLimit,
                keepsStartOfLongerBody: true)
            do {
                var response: HTTPResponse
                do {
                    response = try client.perform(request)
                } catch  where error.code == .certificateRejected && verifiesPeer {
                    certificate.rejection = error.description
                    verifiesPeer = false
                    request.verifiesPeer = false
                    response = try client.perform(request)
                }
                if certificate.notAfterUnixSeconds == nil, let leaf = response.peerCertificates.first {
                    certificate.notAfterUnixSeconds = (try? Certificate(pemEncoded: leaf))?.notAfterUnixSeconds
                }
                documents[file] = .response(
                    status: response.status, contentType: response.header("content-type"),
                    location: response.header("location"), body: response.body,
                    exceededLimit: response.bodyExceededLimit)
            } catch {
                documents[file] = .failed(error.description)
            }
        }
        return (certificate, documents)
    }
}

/// The URL the doctor checks: `https://HOST[:PORT]` with no user, path (but `/`), query or fragment. Plain http is
/// refused: devices fetch the files over HTTPS only.
struct DoctorTarget {
    let host: String
    let port: Int

    struct Invalid: Error {
        let reason: String
    }

    init(url: String) throws(Invalid) {
        let form = "the URL must be https://HOST[:PORT], the relying party ID's host, like https://example.com"
        guard url.utf8.count <= 300 else { throw Invalid(reason: form) }
        let lowered = url.lowercased()
        if lowered.hasPrefix("http://") {
            throw Invalid(reason: "devices fetch the well-known files over HTTPS only: \(form)")
        }
        guard lowered.hasPrefix("https://") else { throw Invalid(reason: form) }
        var rest = Substring(lowered.dropFirst("https://".count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), ConfigurationValues.isValidHostName(String(parts[0])) else {
            throw Invalid(reason: form)
        }
        host = String(parts[0])
        if parts.count == 2 {
            guard (1...5).contains(parts[1].count), parts[1].allSatisfy({ ("0"..."9").contains($0) }),
                let port = Int(parts[1]),
                (1...65_535).contains(port)
            else { throw Invalid(reason: "the port must be 1 to 65535") }
            self.port = port
        } else {
            port = 443
        }
    }

    /// `https://host` or `https://host:port`.
    var origin: String { port == 443 ? "https://\(host)" : "https://\(host):\(port)" }
}

/// The doctor's findings as lines for a person, or as one JSON document.
enum DoctorReport {
    static func text(target: DoctorTarget, expectation: DeploymentExpectation, findings: [DeploymentFinding]) -> String
    {
        var text = "doctor: \(target.origin) for the relying party ID \(expectation.relyingPartyID)\n"
        for finding in findings {
            let mark =
                switch finding.severity {
                case .failure: "FAIL"
                case .warning: "WARN"
                case .passed: "ok  "
                }
            text += "\(mark)  \(finding.check): \(Printable.text(finding.problem))\n"
            if let fix = finding.fix { text += "      fix: \(Printable.text(fix))\n" }
        }
        let failures = findings.filter { $0.severity == .failure }.count
        let warnings = findings.filter { $0.severity == .warning }.count
        text += "\(failures) failure\(failures == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")\n"
        return text
    }

    static func json(target: DoctorTarget, expectation: DeploymentExpectation, findings: [DeploymentFinding])
        -> JSONValue
    {
        [
            "url": .string(target.origin),
            "relyingPartyID": .string(expectation.relyingPartyID),
            "failures": .integer(findings.filter { $0.severity == .failure }.count),
            "warnings": .integer(findings.filter { $0.severity == .warning }.count),
            "findings": .array(
                findings.map { finding in
                    [
                        "check": .string(finding.check), "code": .string(finding.code.rawValue),
                        "severity": .string(finding.severity.rawValue), "problem": .string(finding.problem),
                        "fix": finding.fix.map { .string($0) } ?? .null,
                    ]
                }),
        ]
    }
}
