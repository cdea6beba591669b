/// What an operator watches to decide when passwords can go: the Prometheus series of the move from passwords to
/// passkeys, each written by the one service that sees the event. The README's "Bringing existing users across" lists them.
public enum AdoptionMetrics {
    /// `passkey_sign_ins_total{method}`: successful sign-ins, `password` (session-service) or `passkey`
    /// (verification-service).
    public static func signedIn(_ metrics: MetricsRegistry, method: String) {
        metrics.increment(
            "passkey_sign_ins_total", help: "Successful sign-ins by method (password, passkey).",
            labels: ["method": method])
    }

    /// `passkey_registrations_total{mode}`: passkeys added, `modal` (a prompt, also at sign-up and recovery) or
    /// `conditional` (Automatic Passkey Upgrade, no prompt).
    public static func registered(_ metrics: MetricsRegistry, mode: String) {
        metrics.increment(
            "passkey_registrations_total", help: "Passkeys registered by mode (modal, conditional).",
            labels: ["mode": mode])
    }

    /// `passkey_automatic_upgrade_attempts_total`: conditional registrations started (challenge-service), granted
    /// or not.
    public static func automaticUpgradeAttempted(_ metrics: MetricsRegistry, outcome: String) {
        metrics.increment(
            "passkey_automatic_upgrade_attempts_total",
            help:
                "Automatic Passkey Upgrade attempts: conditional registrations started, by outcome (started, refused).",
            labels: ["outcome": outcome])
    }

    /// `passkey_automatic_upgrade_successes_total`: conditional registrations that stored a passkey.
    public static func automaticUpgradeSucceeded(_ metrics: MetricsRegistry) {
        metrics.increment(
            "passkey_automatic_upgrade_successes_total",
            help: "Automatic Passkey Upgrade successes: passkeys stored by a conditional registration.")
    }

    /// `passkey_password_rehashes_total{from}`: stored legacy or weaker hashes replaced by argon2id at a sign-in
    /// (session-service), by the scheme replaced.
    public static func passwordRehashed(_ metrics: MetricsRegistry, from scheme: String) {
        metrics.increment(
            "passkey_password_rehashes_total", help: "Stored password hashes replaced by argon2id at sign-in.",
            labels: ["from": scheme])
    }

    /// The ways an account can sign in, as the `sign_in_method` label of `passkey_accounts`.
    public enum SignInMethods: String, CaseIterable, Sendable {
        case passwordOnly = "password_only"
        case both
        case passkeyOnly = "passkey_only"
    }

    /// `passkey_accounts{sign_in_method}`: accounts by the ways they can sign in (session-service, from the counts
    /// the database maintains).
    public static func accounts(_ metrics: MetricsRegistry, _ counts: [SignInMethods: Int]) {
        for method in SignInMethods.allCases {
            metrics.set(
                "passkey_accounts", help: "Accounts by sign-in method (password_only, both, passkey_only).",
                labels: ["sign_in_method": method.rawValue], to: Double(counts[method] ?? 0))
        }
    }
}
