import Configuration

/// What challenge-service reads from the environment (docs/configuration.md, the rows read by `challenge-service`).
public struct ChallengeServiceConfiguration: ServiceConfiguration, Equatable {
    public static let service = GRPCServiceName.challengeService
    public var process: ServiceProcessConfiguration
    public var relyingPartyID: String
    public var relyingPartyName: String
    /// Seconds a sign-in or add-a-passkey challenge may be answered.
    public var challengeLifetime: Double
    /// Seconds a passkey sign-up may be finished.
    public var accountRegistrationLifetime: Double
    /// The ceremony tables' sweep, and how long an ended ceremony row is kept (seconds).
    public var sweep: SweepConfiguration
    public var ceremonyRetention: Double

    public init(_ env: EnvironmentReader) throws {
        process = try ServiceProcessConfiguration(env, service: Self.service)
        relyingPartyID = try env.relyingPartyID()
        relyingPartyName = env.relyingPartyName()
        challengeLifetime = try env.duration("PASSKEY_CHALLENGE_LIFETIME", default: "5m")
        accountRegistrationLifetime = try env.duration("PASSKEY_ACCOUNT_REGISTRATION_LIFETIME", default: "10m")
        sweep = try SweepConfiguration(env)
        ceremonyRetention = try env.ceremonyRetention()
    }
}
