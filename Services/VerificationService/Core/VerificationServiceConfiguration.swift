import Configuration
import WebAuthn

/// What verification-service reads from the environment (docs/configuration.md, the rows read by
/// `verification-service`).
public struct VerificationServiceConfiguration: ServiceConfiguration, Equatable {
    public static let service = GRPCServiceName.verificationService
    public var process: ServiceProcessConfiguration
    public var relyingPartyID: String
    /// The client-data origins listed in `PASSKEY_ORIGINS`.
    public var origins: [String]
    /// Web origins outside the RP ID's domain that share its passkeys (`PASSKEY_RELATED_ORIGINS`).
    public var relatedOrigins: [String]
    /// Android apps (`PASSKEY_ANDROID_APPS`), whose `android:apk-key-hash:` origins are allowed.
    public var androidApps: [AndroidApp]
    /// Seconds a session issued by a passkey sign-in lasts.
    public var sessionLifetime: Double
    /// What verification enforces (`PASSKEY_ALGORITHMS`, user verification, attestation, AAGUIDs, metadata).
    public var passkeyPolicy: PasskeyPolicyConfiguration
    /// Signed access tokens and refresh tokens, or opaque tokens (`PASSKEY_SESSION_TOKENS`, ...).
    public var sessionTokens: SessionTokenConfiguration
    /// What a sign-in whose BE flag differs from the stored one does (`PASSKEY_BACKUP_ELIGIBILITY_CHANGE`):
    /// `update`, the default, stores and audits the new BE and BS; `reject` refuses it with `backup_state_invalid`.
    public var backupEligibilityChange: BackupEligibilityChangePolicy

    public init(_ env: EnvironmentReader) throws {
        process = try ServiceProcessConfiguration(env, service: Self.service)
        relyingPartyID = try env.relyingPartyID()
        origins = try env.origins()
        relatedOrigins = try env.relatedOrigins()
        androidApps = try env.androidApps()
        sessionLifetime = try env.sessionLifetime()
        passkeyPolicy = try PasskeyPolicyConfiguration(env)
        sessionTokens = try SessionTokenConfiguration(env)
        let change = env.string("PASSKEY_BACKUP_ELIGIBILITY_CHANGE", default: "update")
        guard let backupEligibilityChange = BackupEligibilityChangePolicy(rawValue: change) else {
            throw ConfigurationError(
                variable: "PASSKEY_BACKUP_ELIGIBILITY_CHANGE",
                problem: "expected update or reject, got \(change.prefix(40))")
        }
        self.backupEligibilityChange = backupEligibilityChange
    }

    /// Every client-data origin a ceremony may come from: `PASSKEY_ORIGINS`, the related origins, and each Android
    /// app's `android:apk-key-hash:` origins.
    public var allowedOrigins: [String] {
        OriginChecks.allowedOrigins(origins: origins, relatedOrigins: relatedOrigins, androidApps: androidApps)
    }

    /// The start-up checks of the origins (`OriginChecks`): a web origin outside the RP ID that is not a related
    /// origin, or an `android:apk-key-hash:` origin no configured app accounts for, stops the service.
    public func checkOrigins() throws(ConfigurationError) {
        try OriginChecks.check(
            relyingPartyID: relyingPartyID, origins: origins, relatedOrigins: relatedOrigins, androidApps: androidApps)
    }
}
