import Crypto
import Domain
import Foundation
import InMemoryStorage
import Synchronization
import UseCaseTestSupport
import Webhooks
import XCTest

/// The in-memory recovery and webhook stores keep the rules `PostgresStorageTests` check on their Postgres
/// repositories (`RecoveryRepositoryTests`, `WebhookRepositoryTests`), so the use-case tests against them mean what
/// they would against the database.
final class InMemoryRecoveryAndWebhooksTests: XCTestCase {
    let clock = TestClock()
    var accounts: InMemoryAccounts!
    var recovery: InMemoryRecovery!

    override func setUp() {
        accounts = InMemoryAccounts(clock: clock.read, failure: StoreDown())
        recovery = InMemoryRecovery(accounts: accounts, clock: clock.read, failure: StoreDown())
    }

    /// An account with one email row; its ID and the row's.
    func account() throws -> (AccountID, UUID) {
        let id = AccountID.random()
        try accounts.addAccount(
            Account(
                id: id, displayName: "Ada", userHandle: UserHandle(Array(repeating: 7, count: 16))!,
                createdAt: clock.now))
        let email = AccountEmail(accountID: id, address: EmailAddress("ada@example.com")!, createdAt: clock.now)
        accounts.state.withLock { $0.emails[email.normalizedEmail] = email }
        return (id, email.id)
    }

    func delivery(_ accountID: AccountID, _ emailID: UUID, purpose: EmailCodePurpose = .recovery) -> EmailCodeDelivery {
        let code = EmailCode(
            id: UUID(), accountID: accountID, emailID: emailID, purpose: purpose, salt: [1], codeDigest: [2],
            digestKeyID: nil, attempts: 0, createdAt: clock.now, expiresAt: clock.now.addingTimeInterval(600))
        let message = OutboxMessage(
            id: UUID(), recipient: "ada@example.com", template: .recoveryCode, code: nil,
            expiresAt: code.expiresAt, createdAt: clock.now)
        return EmailCodeDelivery(code: code, message: message)
    }

    func charge(_ accountID: AccountID) -> GuessCharge {
        GuessCharge(accountID: accountID, kind: .code, limit: GuessLimit(limit: 4, period: 3600), now: clock.now)
    }

    func testANewCodeConsumesTheEarlierOneOfItsPurposeAndAttemptsStopAtTheLimit() async throws {
        let (id, emailID) = try account()
        let first = delivery(id, emailID)
        try await recovery.issue(first)
        clock.advance(by: 1)
        let second = delivery(id, emailID)
        try await recovery.issue(second)
        try await recovery.issue(delivery(id, emailID, purpose: .verification))
        let attempted = try await recovery.attempt(
            emailID: emailID, purpose: .recovery, maximumAttempts: 1, claiming: charge(id))
        XCTAssertEqual(attempted?.id, second.code.id, "only the newest is live")
        XCTAssertEqual(attempted?.attempts, 1)
        let over = try await recovery.attempt(
            emailID: emailID, purpose: .recovery, maximumAttempts: 1, claiming: charge(id))
        XCTAssertNil(over, "no attempt past the limit")
        XCTAssertEqual(recovery.state.withLock { $0.outbox.count }, 3, "each code's message is queued")
    }

    func testAnAttemptClaimsItsGuessWhateverItFindsAndWithoutRoomTriesNothing() async throws {
        let (id, emailID) = try account()
        let none = try await recovery.attempt(
            emailID: emailID, purpose: .recovery, maximumAttempts: 5, claiming: charge(id))
        XCTAssertNil(none)
        XCTAssertEqual(
            accounts.state.withLock { $0.failedGuesses[FailedGuessKey(accountID: id, kind: .code)]?.level }, 1,
            "claimed though there was no code")
        try await recovery.issue(delivery(id, emailID))
        _ = try await recovery.attempt(emailID: emailID, purpose: .recovery, maximumAttempts: 5, claiming: charge(id))
        let full = try await recovery.attempt(
            emailID: emailID, purpose: .recovery, maximumAttempts: 5, claiming: charge(id))
        XCTAssertNil(full, "the budget (2) is full")
        XCTAssertEqual(recovery.state.withLock { $0.codes.values.first?.attempts }, 1, "the code was not tried")
    }

    func testAProofIsConsumedOnceAndAnExpiredOneNever() async throws {
        let (id, emailID) = try account()
        let issued = delivery(id, emailID)
        try await recovery.issue(issued)
        func session() -> AuthenticationSession {
            AuthenticationSession(
                id: .random(), accountID: id, tokenDigest: [1], authenticationMethod: .recovery, createdAt: clock.now,
                expiresAt: clock.now.addingTimeInterval(900), revokedAt: nil)
        }
        let first = try await recovery.startRecoverySession(
            session(), consuming: .emailCode(issued.code.id), revokingOtherSessions: true)
        let again = try await recovery.startRecoverySession(
            session(), consuming: .emailCode(issued.code.id), revokingOtherSessions: true)
        XCTAssertEqual(first, 0)
        XCTAssertNil(again)
        let late = delivery(id, emailID)
        try await recovery.issue(late)
        clock.advance(by: 601)
        let expired = try await recovery.startRecoverySession(
            session(), consuming: .emailCode(late.code.id), revokingOtherSessions: true)
        XCTAssertNil(expired)
        XCTAssertEqual(accounts.state.withLock { $0.sessions.count }, 1, "nothing is written for a refused proof")
    }

    func testAWebhookLeaseIsHeldByOneHolderAndAFailureBacksOff() async throws {
        let webhooks = InMemoryWebhooks(clock: clock.read)
        let sealed = try WebhookSecret(bytes: Array(repeating: 1, count: 32)).sealed(
            for: UUID(), with: SecretKeyRing(keys: [Array(repeating: 2, count: 32)])!)
        let endpoint = try await webhooks.createEndpoint(
            id: UUID(), url: "https://hooks.example.com/in", eventTypes: ["*"], description: "", secret: sealed)
        let id = try XCTUnwrap(endpoint?.id)
        webhooks.enqueue(to: id)
        let leased = try await webhooks.lease(endpoints: 1, batch: 8, lease: 30)
        let batch = try XCTUnwrap(leased.first)
        let held = try await webhooks.lease(endpoints: 1, batch: 8, lease: 30)
        XCTAssertEqual(held, [])
        let strangerDisabled = try await webhooks.recordFailure(
            batch.deliveries[0], lease: UUID(), error: "x", retryAfter: 1, disableAfter: 0)
        XCTAssertFalse(strangerDisabled, "only the holder records")
        XCTAssertEqual(webhooks.row(id)?.failures, 0)
        let disabled = try await webhooks.recordFailure(
            batch.deliveries[0], lease: batch.lease, error: "HTTP 500", retryAfter: 10, disableAfter: 3600)
        XCTAssertFalse(disabled)
        let backedOff = try await webhooks.lease(endpoints: 1, batch: 8, lease: 30)
        XCTAssertEqual(backedOff, [])
        clock.advance(by: 10)
        let again = try await webhooks.lease(endpoints: 1, batch: 8, lease: 30)
        XCTAssertEqual(again.first?.deliveries.first?.attempts, 1)
    }
}
