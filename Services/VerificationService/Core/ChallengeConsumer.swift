import Domain
import Encoding
import Foundation
import ServiceContracts
import ServiceRuntime

/// Consumes challenges, which challenge-service owns. A protocol so the ceremonies can be tested without it.
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

/// Consumes challenges through challenge-service's gRPC API.
public struct RemoteChallengeConsumer: ChallengeConsumer {
    let service: ServiceClient

    public init(service: ServiceClient) { self.service = service }

    public func consumeRegistration(challengeID: ChallengeID, accountID: AccountID) async throws
        -> (challenge: [UInt8], mode: RegistrationMode)
    {
        var request = ConsumeRegistrationChallengeRequest()
        request.challengeID = challengeID.description
        request.accountID = accountID.description
        let consumed = try await service.call(
            ChallengeServiceMethods.consumeRegistrationChallenge, request, as: ConsumedRegistrationChallenge.self)
        guard let mode = RegistrationMode(rawValue: consumed.mode) else {
            throw DomainError(.unavailable, "challenge-service sent an unknown mode")
        }
        return (consumed.challenge, mode)
    }

    public func consumeAccountRegistration(id: AccountRegistrationID) async throws -> PendingAccountRegistration {
        var request = ConsumeAccountRegistrationRequest()
        request.registrationID = id.description
        let consumed = try await service.call(
            ChallengeServiceMethods.consumeAccountRegistration, request, as: ConsumedAccountRegistration.self)
        guard let handle = UserHandle(consumed.userHandle),
            let accountID = UUID(text: consumed.prospectiveAccountID)
        else { throw DomainError(.unavailable, "challenge-service sent a malformed registration") }
        return PendingAccountRegistration(
            prospectiveAccountID: AccountID(accountID), userHandle: handle,
            email: consumed.email.isEmpty ? nil : consumed.email,
            displayName: consumed.displayName.isEmpty ? nil : consumed.displayName, challenge: consumed.challenge)
    }

    public func consumeAuthentication(challengeID: ChallengeID) async throws -> [UInt8] {
        var request = ConsumeAuthenticationChallengeRequest()
        request.challengeID = challengeID.description
        return try await service.call(
            ChallengeServiceMethods.consumeAuthenticationChallenge, request, as: ConsumedAuthenticationChallenge.self
        ).challenge
    }
}
