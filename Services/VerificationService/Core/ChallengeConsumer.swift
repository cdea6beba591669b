import Domain
import Foundation

/// Consumes the single-use rows challenge-service issued. A protocol so the ceremonies can be tested without a
/// database.
public protocol ChallengeConsumer: Sendable {
    /// The challenge bytes and the mode it was issued in; throws `challengeUnavailable`.
    func consumeRegistration(challengeID: ChallengeID, accountID: AccountID) async throws
        -> (challenge: [UInt8], mode: RegistrationMode)
    /// The registration as started; throws `challengeUnavailable`.
    func consumeAccountRegistration(id: AccountRegistrationID) async throws -> PendingAccountRegistration
    /// The challenge bytes; throws `challengeUnavailable`.
    func consumeAuthentication(challengeID: ChallengeID) async throws -> [UInt8]
}

/// What finishing a passkey account creation needs from its consumed registration.
public struct PendingAccountRegistration: Sendable {
    public var prospectiveAccountID: AccountID
    public var userHandle: UserHandle
    public var email: String?
    public var displayName: String?
    public var challenge: [UInt8]

    public init(
        prospectiveAccountID: AccountID, userHandle: UserHandle, email: String?, displayName: String?,
        challenge: [UInt8]
    ) {
        self.prospectiveAccountID = prospectiveAccountID
        self.userHandle = userHandle
        self.email = email
        self.displayName = displayName
        self.challenge = challenge
    }
}

/// Consumes challenges in the shared database, each with the repositories' one atomic statement
/// (`UPDATE … SET consumed_at = now() WHERE … AND consumed_at IS NULL AND expires_at > now() RETURNING …`), so of
/// any number of racing finishes exactly one gets the challenge, with no call to challenge-service in between.
public struct StoredChallengeConsumer: ChallengeConsumer {
    let registrationChallenges: any RegistrationChallengeRepository
    let authenticationChallenges: any AuthenticationChallengeRepository
    let accountRegistrations: any AccountRegistrationRepository

    public init(
        registrationChallenges: any RegistrationChallengeRepository,
        authenticationChallenges: any AuthenticationChallengeRepository,
        accountRegistrations: any AccountRegistrationRepository
    ) {
        self.registrationChallenges = registrationChallenges
        self.authenticationChallenges = authenticationChallenges
        self.accountRegistrations = accountRegistrations
    }

    public func consumeRegistration(challengeID: ChallengeID, accountID: AccountID) async throws
        -> (challenge: [UInt8], mode: RegistrationMode)
    {
        let row = try Self.unwrap(await registrationChallenges.consume(id: challengeID, accountID: accountID))
        return (row.challenge, row.mode)
    }

    public func consumeAccountRegistration(id: AccountRegistrationID) async throws -> PendingAccountRegistration {
        let row = try Self.unwrap(await accountRegistrations.consume(id: id))
        return PendingAccountRegistration(
            prospectiveAccountID: row.prospectiveAccountID, userHandle: row.userHandle, email: row.email,
            displayName: row.displayName, challenge: row.challenge)
    }

    public func consumeAuthentication(challengeID: ChallengeID) async throws -> [UInt8] {
        try Self.unwrap(await authenticationChallenges.consume(id: challengeID)).challenge
    }

    static func unwrap<Row>(_ consumption: Consumption<Row>) throws -> Row {
        switch consumption {
        case .consumed(let row): return row
        case .unavailable:
            throw DomainError(
                .challengeUnavailable, "the challenge is unknown, expired, already used, or issued to another account")
        }
    }
}
