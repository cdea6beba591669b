import Domain
import Foundation
import Postgres
import PostgresStorage
import PostgresTestSupport
import Synchronization
import XCTest

/// The recovery tables' rules where they live, in the database: attempts that never pass the limit, codes and
/// proofs consumed once however many race, and outbox messages handed out once however many workers run.
final class RecoveryRepositoryTests: StorageTestCase {
    func target(_ address: String = "ada@example.com") async throws -> RecoveryTarget {
        _ = try await storedPasswordAccount(email: address)
        let found = try await storage.recovery.target(normalizedEmail: address)
        return try XCTUnwrap(found)
    }

    /// An attempt's claim on the account's failed code guesses, at the standard limit (room for far more than a test
    /// makes).
    static func charge(_ target: RecoveryTarget) -> GuessCharge {
        GuessCharge(accountID: target.accountID, kind: .code, limit: .standard, now: Date())
    }

    func delivery(for target: RecoveryTarget, purpose: EmailCodePurpose = .recovery, lifetime: TimeInterval = 600)
        -> EmailCodeDelivery
    {
        let now = microsecondDate()
        return EmailCodeDelivery(
            code: EmailCode(
                id: UUID(), accountID: target.accountID, emailID: target.emailID, purpose: purpose,
                salt: randomBytes(16), codeDigest: randomBytes(32), digestKeyID: "0123456789abcdef", attempts: 0,
                createdAt: now, expiresAt: now.addingTimeInterval(lifetime)),
            message: OutboxMessage(
                id: UUID(), recipient: target.address, template: .recoveryCode,
                code: .sealed(keyID: "0123456789abcdef", box: randomBytes(36)),
                expiresAt: now.addingTimeInterval(lifetime),
                createdAt: now))
    }

    func testRacingAttemptsNeverPassTheLimitAndANewCodeReplacesTheOld() async throws {
        let target = try await target()
        let first = delivery(for: target)
        try await storage.recovery.issue(first)
        let recovery = storage.recovery
        let counted = await withTaskGroup(of: EmailCode?.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try? await recovery.attempt(
                        emailID: target.emailID, purpose: .recovery, maximumAttempts: 5, claiming: Self.charge(target))
                }
            }
            return await group.reduce(into: [EmailCode]()) { if let code = $1 { $0.append(code) } }
        }
        XCTAssertEqual(counted.map(\.attempts).sorted(), [1, 2, 3, 4, 5])
        XCTAssertEqual(Set(counted.map(\.id)), [first.code.id])
        // A new code is live with attempts of its own; the old one is consumed.
        let second = delivery(for: target)
        try await storage.recovery.issue(second)
        let attempt = try await storage.recovery.attempt(
            emailID: target.emailID, purpose: .recovery, maximumAttempts: 5, claiming: Self.charge(target))
        XCTAssertEqual(attempt?.id, second.code.id)
        XCTAssertEqual(attempt?.attempts, 1)
        let verification = try await storage.recovery.attempt(
            emailID: target.emailID, purpose: .verification, maximumAttempts: 5, claiming: Self.charge(target))
        XCTAssertNil(verification, "purposes are apart")
    }

    func testAnExpiredCodeTakesNoAttemptAndVerificationMarksTheEmailOnce() async throws {
        let target = try await target()
        XCTAssertFalse(target.verified)
        let code = delivery(for: target, purpose: .verification)
        try await storage.recovery.issue(code)
        let completed = try await storage.recovery.completeVerification(codeID: code.code.id)
        let again = try await storage.recovery.completeVerification(codeID: code.code.id)
        XCTAssertTrue(completed)
        XCTAssertFalse(again, "used once")
        let verified = try await storage.recovery.target(normalizedEmail: target.address)
        XCTAssertEqual(verified?.verified, true)
        let expired = delivery(for: target)
        try await storage.recovery.issue(expired)
        _ = try await pool.query(
            "UPDATE email_codes SET created_at = now() - interval '1 hour', expires_at = now() - interval '1 minute'")
        let attempt = try await storage.recovery.attempt(
            emailID: target.emailID, purpose: .recovery, maximumAttempts: 5, claiming: Self.charge(target))
        XCTAssertNil(attempt)
        // Where no code is counted, a decoy row is: the same kind of write.
        try await storage.recovery.countDecoyAttempt(slot: 70)
        let decoys = try await pool.query("SELECT attempts FROM recovery_attempt_decoys WHERE slot = 6")
        XCTAssertEqual(try decoys.first?.decode(Int.self, "attempts"), 1, "slots wrap around 64")
    }

    func testRacingRecoveriesWithOneProofStartOneSessionAndRevokeTheOthers() async throws {
        let target = try await target()
        let stored = try await storage.accounts.account(id: target.accountID)
        let account = try XCTUnwrap(stored)
        let existing = makeSession(for: account)
        try await storage.sessions.add(existing)
        let code = delivery(for: target)
        try await storage.recovery.issue(code)
        let recovery = storage.recovery
        let sessions = (0..<6).map { _ in makeSession(for: account, method: .recovery, lifetime: 900) }
        let outcomes = await withTaskGroup(of: Int?.self) { group in
            for session in sessions {
                group.addTask {
                    try? await recovery.startRecoverySession(
                        session, consuming: .emailCode(code.code.id), revokingOtherSessions: true)
                }
            }
            return await group.reduce(into: [Int?]()) { $0.append($1) }
        }
        XCTAssertEqual(outcomes.compactMap { $0 }, [1], "one recovery; it revoked the one other session")
        let live = try await storage.sessions.liveSessions(of: account.id, at: Date())
        XCTAssertEqual(live.map(\.authenticationMethod), [.recovery])
        // Another account's proof does not work for this one.
        let other = try await self.target("grace@example.com")
        let foreign = delivery(for: other)
        try await storage.recovery.issue(foreign)
        let refused = try await storage.recovery.startRecoverySession(
            makeSession(for: account, method: .recovery), consuming: .emailCode(foreign.code.id),
            revokingOtherSessions: false)
        XCTAssertNil(refused)
    }

    func testRecoveryCodesAreReplacedWholeAndUsedOnce() async throws {
        let target = try await target()
        let stored = try await storage.accounts.account(id: target.accountID)
        let account = try XCTUnwrap(stored)
        try await storage.recovery.replaceRecoveryCodes(
            of: account.id, digests: (0..<10).map { _ in randomBytes(32) }, at: Date())
        let old = try await storage.recovery.unusedRecoveryCodes(of: account.id)
        try await storage.recovery.replaceRecoveryCodes(
            of: account.id, digests: (0..<10).map { _ in randomBytes(32) }, at: Date())
        let new = try await storage.recovery.unusedRecoveryCodes(of: account.id)
        XCTAssertEqual(new.count, 10)
        XCTAssertTrue(Set(old).isDisjoint(with: new))
        let stale = try await storage.recovery.startRecoverySession(
            makeSession(for: account, method: .recovery), consuming: .recoveryCode(old[0].id),
            revokingOtherSessions: true)
        XCTAssertNil(stale)
        let used = try await storage.recovery.startRecoverySession(
            makeSession(for: account, method: .recovery), consuming: .recoveryCode(new[0].id),
            revokingOtherSessions: true)
        XCTAssertEqual(used, 0)
        let again = try await storage.recovery.startRecoverySession(
            makeSession(for: account, method: .recovery), consuming: .recoveryCode(new[0].id),
            revokingOtherSessions: true)
        XCTAssertNil(again)
        let summary = try await storage.accounts.summary(id: account.id)
        XCTAssertEqual(summary?.recoveryCodesRemaining, 9)
    }

    func testConcurrentWorkersDeliverEachMessageOnceAndRetriesWaitTheirTurn() async throws {
        let target = try await target()
        for _ in 0..<30 { try await storage.recovery.issue(delivery(for: target)) }
        let handed = HandedOut()
        let outbox = storage.outbox
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    while (try? await outbox.deliverNext({ message in
                        handed.ids.withLock { $0.append(message.id) }
                        return .delivered
                    })) == true {}
                }
            }
        }
        let ids = handed.ids.withLock { $0 }
        XCTAssertEqual(ids.count, 30)
        XCTAssertEqual(Set(ids).count, 30, "no message handed out twice")
        let unsent = try await pool.query(
            "SELECT count(*) AS n FROM email_outbox WHERE sent_at IS NULL OR code IS NOT NULL OR sealed_code IS NOT NULL"
        )
        XCTAssertEqual(try unsent.first?.decode(Int.self, "n"), 0, "sent, and the codes cleared")

        try await storage.recovery.issue(delivery(for: target))
        let deferred = try await outbox.deliverNext { _ in .retry(after: 3600, error: "451 try later") }
        let early = try await outbox.deliverNext { _ in .delivered }
        XCTAssertTrue(deferred)
        XCTAssertFalse(early, "not due for an hour")
        _ = try await pool.query("UPDATE email_outbox SET next_attempt_at = now() WHERE sent_at IS NULL")
        let givenUp = try await outbox.deliverNext { message in
            XCTAssertEqual(message.attempts, 1)
            return .giveUp(error: "550 no such user")
        }
        let after = try await outbox.deliverNext { _ in .delivered }
        XCTAssertTrue(givenUp)
        XCTAssertFalse(after, "given up for good")
        // A message whose code expired unsent is given up without being handed out.
        try await storage.recovery.issue(delivery(for: target))
        _ = try await pool.query(
            "UPDATE email_outbox SET created_at = now() - interval '1 hour', expires_at = now() - interval '1 minute' WHERE sent_at IS NULL AND failed_at IS NULL"
        )
        let expiredTaken = try await outbox.deliverNext { _ in
            XCTFail("an expired message is not sent")
            return .delivered
        }
        XCTAssertTrue(expiredTaken)
        let failed = try await pool.query(
            "SELECT count(*) AS n FROM email_outbox WHERE failed_at IS NOT NULL AND code IS NULL")
        XCTAssertEqual(try failed.first?.decode(Int.self, "n"), 2)
    }
}

/// The messages the workers were handed, from every task.
final class HandedOut: Sendable {
    let ids = Mutex<[UUID]>([])
}
