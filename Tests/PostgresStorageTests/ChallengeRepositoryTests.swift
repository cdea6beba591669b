import Domain
import Foundation
import PostgresStorage
import PostgresTestSupport
import XCTest

final class ChallengeRepositoryTests: StorageTestCase {
    func registrationChallenge(for account: Account, mode: RegistrationMode = .modal, expiresIn: TimeInterval = 300)
        -> RegistrationChallenge
    {
        let now = microsecondDate()
        return RegistrationChallenge(
            id: .random(), accountID: account.id, challenge: randomBytes(32), mode: mode,
            createdAt: microsecondDate(now.addingTimeInterval(min(0, expiresIn) - 1)),
            expiresAt: microsecondDate(now.addingTimeInterval(expiresIn)), consumedAt: nil)
    }

    func authenticationChallenge(expiresIn: TimeInterval = 300) -> AuthenticationChallenge {
        let now = microsecondDate()
        return AuthenticationChallenge(
            id: .random(), challenge: randomBytes(48),
            createdAt: microsecondDate(now.addingTimeInterval(min(0, expiresIn) - 1)),
            expiresAt: microsecondDate(now.addingTimeInterval(expiresIn)), consumedAt: nil)
    }

    func testRegistrationChallengeRoundTripsAndIsConsumedOnce() async throws {
        let account = try await storedPasswordAccount()
        let challenge = registrationChallenge(for: account, mode: .conditional)
        try await storage.registrationChallenges.add(challenge)
        guard
            case .consumed(let consumed) = try await storage.registrationChallenges.consume(
                id: challenge.id, accountID: account.id)
        else { return XCTFail("unavailable") }
        XCTAssertNotNil(consumed.consumedAt)
        var expected = challenge
        expected.consumedAt = consumed.consumedAt
        XCTAssertEqual(consumed, expected)
        await assertEqual(
            try await storage.registrationChallenges.consume(id: challenge.id, accountID: account.id), .unavailable)
    }

    func testRegistrationChallengeOfAnotherAccountUnknownOrExpiredIsUnavailable() async throws {
        let owner = try await storedPasswordAccount(email: "owner@example.com")
        let other = try await storedPasswordAccount(email: "other@example.com")
        let challenge = registrationChallenge(for: owner)
        try await storage.registrationChallenges.add(challenge)
        await assertEqual(
            try await storage.registrationChallenges.consume(id: challenge.id, accountID: other.id), .unavailable)
        await assertEqual(
            try await storage.registrationChallenges.consume(id: .random(), accountID: owner.id), .unavailable)
        let expired = registrationChallenge(for: owner, expiresIn: -1)
        try await storage.registrationChallenges.add(expired)
        await assertEqual(
            try await storage.registrationChallenges.consume(id: expired.id, accountID: owner.id), .unavailable)
        // The foreign attempt did not use the challenge up for its owner.
        guard case .consumed = try await storage.registrationChallenges.consume(id: challenge.id, accountID: owner.id)
        else { return XCTFail("the owner's challenge was spent by another account's attempt") }
        // The expired challenge and the consumed one have both ended.
        await assertEqual(try await storage.registrationChallenges.deleteEnded(before: Date(), limit: 100), 2)
    }

    func testAuthenticationChallengeRoundTripsExpiresAndIsSwept() async throws {
        let challenge = authenticationChallenge()
        try await storage.authenticationChallenges.add(challenge)
        guard case .consumed(let consumed) = try await storage.authenticationChallenges.consume(id: challenge.id) else {
            return XCTFail("unavailable")
        }
        XCTAssertEqual(consumed.challenge, challenge.challenge)
        XCTAssertEqual(consumed.id, challenge.id)
        XCTAssertEqual(consumed.createdAt, challenge.createdAt)
        XCTAssertEqual(consumed.expiresAt, challenge.expiresAt)
        await assertEqual(try await storage.authenticationChallenges.consume(id: challenge.id), .unavailable)
        await assertEqual(try await storage.authenticationChallenges.consume(id: .random()), .unavailable)

        let expired = authenticationChallenge(expiresIn: -1)
        try await storage.authenticationChallenges.add(expired)
        await assertEqual(try await storage.authenticationChallenges.consume(id: expired.id), .unavailable)
        // The expired challenge and the consumed one have both ended.
        await assertEqual(try await storage.authenticationChallenges.deleteEnded(before: Date(), limit: 100), 2)
        await assertEqual(try await storage.authenticationChallenges.deleteEnded(before: Date(), limit: 100), 0)
    }

    func testFiftyConcurrentConsumersOfOneChallengeGiveExactlyOneSuccess() async throws {
        let challenge = authenticationChallenge()
        try await storage.authenticationChallenges.add(challenge)
        let repository = storage.authenticationChallenges
        let successes = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    if case .consumed = try await repository.consume(id: challenge.id) { return true }
                    return false
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        XCTAssertEqual(successes, 1)
    }

    func testFiftyConcurrentConsumersOfOneAccountRegistrationGiveExactlyOneSuccess() async throws {
        let registration = AccountRegistration(
            id: .random(), prospectiveAccountID: .random(), userHandle: UserHandle(randomBytes(32))!,
            email: "new@example.com", displayName: "New", challenge: randomBytes(32), createdAt: microsecondDate(),
            expiresAt: microsecondDate(Date().addingTimeInterval(600)), consumedAt: nil, completedAt: nil)
        try await storage.accountRegistrations.add(registration)
        let repository = storage.accountRegistrations
        let results = try await withThrowingTaskGroup(of: AccountRegistration?.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    if case .consumed(let row) = try await repository.consume(id: registration.id) { return row }
                    return nil
                }
            }
            return try await group.reduce(into: [AccountRegistration]()) { if let row = $1 { $0.append(row) } }
        }
        XCTAssertEqual(results.count, 1)
        var expected = registration
        expected.consumedAt = results.first?.consumedAt
        XCTAssertEqual(results.first, expected)
    }

    func testExpiredAccountRegistrationIsUnavailable() async throws {
        let now = microsecondDate()
        let registration = AccountRegistration(
            id: .random(), prospectiveAccountID: .random(), userHandle: UserHandle(randomBytes(16))!, email: nil,
            displayName: nil, challenge: randomBytes(32), createdAt: now.addingTimeInterval(-700),
            expiresAt: now.addingTimeInterval(-100), consumedAt: nil, completedAt: nil)
        try await storage.accountRegistrations.add(registration)
        await assertEqual(try await storage.accountRegistrations.consume(id: registration.id), .unavailable)
        await assertEqual(try await storage.accountRegistrations.deleteEnded(before: now, limit: 100), 1)
    }
}
