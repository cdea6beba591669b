import Configuration

/// What verification-service reads from the environment (docs/configuration.md, the rows read by
/// `verification-service`).
public struct VerificationServiceConfiguration: ServiceConfiguration, Equatable {
    public static let service = GRPCServiceName.verificationService
    public var process: ServiceProcessConfiguration
    public var relyingPartyID: String
    /// The client-data origins a ceremony may come from (`PASSKEY_ORIGINS`).
    public var origins: [String]
    /// Seconds a session issued by a passkey sign-in lasts.
    public var sessionLifetime: Double
    /// What verification enforces (`PASSKEY_ALGORITHMS`, user verification, attestation, AAGUIDs, metadata).
    public var passkeyPolicy: PasskeyPolicyConfiguration
    /// Signed access tokens and refresh tokens, or opaque tokens (`PASSKEY_SESSION_TOKENS`, ...).
    public var sessionTokens: SessionTokenConfiguration

    public init(_ env: EnvironmentReader) throws {
        process = try ServiceProcessConfiguration(env, service: Self.service)
        relyingPartyID = try env.relyingPartyID()
        origins = try env.origins()
        sessionLifetime = try env.sessionLifetime()
        passkeyPolicy = try PasskeyPolicyConfiguration(env)
        sessionTokens = try SessionTokenConfiguration(env)
    }
}
