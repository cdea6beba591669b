/// One result of checking a deployment from the outside: what was checked, whether it would break devices, what is
/// wrong (or what was found right) and what to change.
public struct DeploymentFinding: Sendable, Equatable {
    /// How much a finding matters.
    public enum Severity: String, Sendable {
        /// Devices will fail: the platform refuses the association, the origin or the certificate.
        case failure
        /// Works today, but something is missing or about to break.
        case warning
        /// Checked and right.
        case passed
    }

    /// What was found, stable across versions: tests and scripts compare these.
    public enum Code: String, Sendable {
        case passed
        case notChecked = "not_checked"
        case unreachable
        case certificateRejected = "certificate_rejected"
        case certificateExpiresSoon = "certificate_expires_soon"
        case redirected
        case notFound = "not_found"
        case unexpectedStatus = "unexpected_status"
        case wrongContentType = "wrong_content_type"
        case tooLarge = "too_large"
        case notJSON = "not_json"
        case malformed
        case appIDMissing = "app_id_missing"
        case appIDNotConfigured = "app_id_not_configured"
        case packageMissing = "package_missing"
        case fingerprintMissing = "fingerprint_missing"
        case fingerprintMalformed = "fingerprint_malformed"
        case relationMissing = "relation_missing"
        case originMissing = "origin_missing"
        case beyondLabelLimit = "beyond_label_limit"
        case originOutsideRelyingParty = "origin_outside_relying_party"
        case relyingPartyNotRegistrable = "relying_party_not_registrable"
        case hostIsNotRelyingParty = "host_is_not_relying_party"
        case nonStandardPort = "non_standard_port"
        case endpointMismatch = "endpoint_mismatch"
    }

    /// The thing checked: `tls`, `relying-party`, or the well-known file's name.
    public let check: String
    public let code: Code
    public let severity: Severity
    /// What is wrong, or what was found right, in one sentence.
    public let problem: String
    /// What to change; nil when nothing needs changing.
    public let fix: String?

    public init(check: String, code: Code, severity: Severity, problem: String, fix: String? = nil) {
        self.check = check
        self.code = code
        self.severity = severity
        self.problem = problem
        self.fix = fix
    }

    static func failure(_ check: String, _ code: Code, _ problem: String, fix: String) -> DeploymentFinding {
        DeploymentFinding(check: check, code: code, severity: .failure, problem: problem, fix: fix)
    }

    static func warning(_ check: String, _ code: Code, _ problem: String, fix: String) -> DeploymentFinding {
        DeploymentFinding(check: check, code: code, severity: .warning, problem: problem, fix: fix)
    }

    static func passed(_ check: String, _ what: String, code: Code = .passed) -> DeploymentFinding {
        DeploymentFinding(check: check, code: code, severity: .passed, problem: what)
    }
}
