import Domain
import Foundation

// The two ceremony tables of `InMemoryAccounts`, as repositories of their own: both protocols have a
// `deleteEnded(before:limit:)`, so one type cannot be both. Each consume is one step under the store's lock, so of any
// number of racing consumers exactly one gets the row, and unknown, expired, consumed and foreign rows all read as
// `.unavailable`.

/// `passkey_registration_challenges` in an `InMemoryAccounts`.
public struct InMemoryRegistrationChallenges: RegistrationChallengeRepository {
    let store: InMemoryAccounts

    public func add(_ challenge: RegistrationChallenge) async throws {
        try store.perform(.addRegistrationChallenge) { state in
            guard state.accounts[challenge.accountID] != nil else {
                throw InMemoryConstraintViolation("passkey_registration_challenges_account_id_fkey")
            }
            guard state.registrationChallenges[challenge.id] == nil else {
                throw InMemoryConstraintViolation("passkey_registration_challenges_pkey")
            }
            guard challenge.expiresAt > challenge.createdAt else {
                throw InMemoryConstraintViolation("passkey_registration_challenges_lifetime_check")
            }
            state.registrationChallenges[challenge.id] = challenge
        }
    }

    public func consume(id: ChallengeID, accountID: AccountID) async throws -> Consumption<RegistrationChallenge> {
        let now = store.clock()
        return try store.perform(.consumeRegistrationChallenge) { state in
            guard var challenge = state.registrationChallenges[id], challenge.accountID == accountID,
                challenge.consumedAt == nil, challenge.expiresAt > now
            else { return .unavailable }
            challenge.consumedAt = now
            state.registrationChallenges[id] = challenge
            return .consumed(challenge)
        }
    }

    public func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int {
        try store.perform(.deleteEndedRegistrationChallenges) { state in
            let expired = state.registrationChallenges.values.filter { row in
                row.expiresAt < cutoff || row.consumedAt.map { $0 < cutoff } ?? false
            }.prefix(limit).map(\.id)
            for id in expired { state.registrationChallenges[id] = nil }
            return expired.count
        }
    }
}

/// `passkey_account_registrations` in an `InMemoryAccounts`. No foreign key: the account does not exist until
/// `createPasskeyAccount` completes the registration.
public struct InMemoryAccountRegistrations: AccountRegistrationRepository {
    let store: InMemoryAccounts

    public func add(_ registration: AccountRegistration) async throws {
        try store.perform(.addAccountRegistration) { state in
            guard state.accountRegistrations[registration.id] == nil else {
                throw InMemoryConstraintViolation("passkey_account_registrations_pkey")
            }
            for other in state.accountRegistrations.values {
                if other.prospectiveAccountID == registration.prospectiveAccountID {
                    throw InMemoryConstraintViolation("passkey_account_registrations_prospective_account_id_key")
                }
                if other.userHandle == registration.userHandle {
                    throw InMemoryConstraintViolation("passkey_account_registrations_user_handle_key")
                }
            }
            guard registration.expiresAt > registration.createdAt else {
                throw InMemoryConstraintViolation("passkey_account_registrations_lifetime_check")
            }
            state.accountRegistrations[registration.id] = registration
        }
    }

    public func consume(id: AccountRegistrationID) async throws -> Consumption<AccountRegistration> {
        let now = store.clock()
        return try store.perform(.consumeAccountRegistration) { state in
            guard var registration = state.accountRegistrations[id], registration.consumedAt == nil,
                registration.completedAt == nil, registration.expiresAt > now
            else { return .unavailable }
            registration.consumedAt = now
            state.accountRegistrations[id] = registration
            return .consumed(registration)
        }
    }

    public func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int {
        try store.perform(.deleteEndedAccountRegistrations) { state in
            let expired = state.accountRegistrations.values.filter { row in
                row.expiresAt < cutoff || row.consumedAt.map { $0 < cutoff } ?? false
            }.prefix(limit).map(\.id)
            for id in expired { state.accountRegistrations[id] = nil }
            return expired.count
        }
    }
}
