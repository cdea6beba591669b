import Configuration
import WebAuthn

/// The configured WebAuthn policy (`PasskeyPolicyConfiguration`) in the verifier's terms: the options the
/// gateway offers and the rules verification-service enforces, made from the same values in one place.
public struct PasskeyPolicy: Sendable {
    /// What the options ask for: algorithms (offered and the only ones accepted), user verification per ceremony,
    /// resident key, hints and attestation conveyance.
    public let options: CeremonyOptions
    /// What a sign count that did not increase does.
    public let signCount: SignCountPolicy
    /// Top-level origins an embedded ceremony may run under; empty refuses every embedded ceremony.
    public let topOrigins: [String]
    /// AAGUIDs that alone may register (nil: any) and those that never may.
    public let allowedAAGUIDs: Set<AAGUID>?
    public let deniedAAGUIDs: Set<AAGUID>

    /// The policy, once its algorithms are known to be ones this build verifies. Throws `ConfigurationError`
    /// naming `PASSKEY_ALGORITHMS` otherwise.
    public init(_ configuration: PasskeyPolicyConfiguration) throws(ConfigurationError) {
        if let algorithms = configuration.algorithms, let problem = CeremonyOptions.problem(withAlgorithms: algorithms)
        {
            throw ConfigurationError(variable: "PASSKEY_ALGORITHMS", problem: problem)
        }
        self.init(checked: configuration)
    }

    /// The policy from a configuration already checked by `init(_:)` (the gateway checks it before it builds its
    /// routes, which only map it).
    public init(checked configuration: PasskeyPolicyConfiguration) {
        options = CeremonyOptions(
            algorithms: configuration.algorithms ?? CeremonyOptions.standard.algorithms,
            registrationUserVerification: Self.requirement(configuration.registrationUserVerification),
            conditionalRegistrationUserVerification: Self.requirement(
                configuration.conditionalRegistrationUserVerification),
            authenticationUserVerification: Self.requirement(configuration.authenticationUserVerification),
            residentKey: ResidentKeyRequirement(rawValue: configuration.residentKey.rawValue) ?? .required,
            hints: configuration.hints.compactMap(CredentialHint.init(rawValue:)),
            attestation: AttestationConveyance(rawValue: configuration.attestation.rawValue) ?? .none)
        signCount = configuration.signCount == .flag ? .acceptAndFlag : .reject
        topOrigins = configuration.topOrigins
        allowedAAGUIDs = configuration.allowedAAGUIDs.map { Set($0.map(AAGUID.init(bytes:))) }
        deniedAAGUIDs = Set(configuration.deniedAAGUIDs.map(AAGUID.init(bytes:)))
    }

    /// The origins policy: `allowed` exactly, and embedded ceremonies only under the configured top origins.
    public func origins(allowing allowed: [String]) -> OriginPolicy {
        OriginPolicy(
            allowedOrigins: allowed, allowCrossOrigin: !topOrigins.isEmpty,
            allowedTopOrigins: topOrigins.isEmpty ? nil : topOrigins)
    }

    /// `base` (the roots) with the configured AAGUID allow- and deny-lists.
    public func trust(from base: AttestationTrust = .platformDefaults) -> AttestationTrust {
        var trust = base
        trust.allowedAAGUIDs = allowedAAGUIDs
        trust.deniedAAGUIDs = deniedAAGUIDs
        return trust
    }

    /// The authentication rules: the sign-count policy, and what a changed BE flag does (configured per service:
    /// verification-service's `PASSKEY_BACKUP_ELIGIBILITY_CHANGE`).
    public func authenticationPolicy(backupEligibilityChange: BackupEligibilityChangePolicy = .update)
        -> AuthenticationPolicy
    {
        AuthenticationPolicy(signCount: signCount, backupEligibilityChange: backupEligibilityChange)
    }

    private static func requirement(_ value: PasskeyPolicyConfiguration.Requirement) -> UserVerificationRequirement {
        UserVerificationRequirement(rawValue: value.rawValue) ?? .preferred
    }
}
