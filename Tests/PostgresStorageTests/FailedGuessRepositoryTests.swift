import Domain
import Foundation
import Postgres
import PostgresStorage
import PostgresTestSupport
import XCTest

/// `failed_guesses` where it lives: read with the sign-in and recovery lookups, one statement per failed or claimed
/// guess, drained by time, claims that never pass the capacity however many race, and each kind apart.
final class FailedGuessRepositoryTests: StorageTestCase {
    let limit = GuessLimit.standard

    func charge(_ account: Account, _ kind: GuessKind = .password, at now: Date = Date()) -> GuessCharge {
        GuessCharge(accountID: account.id, kind: kind, limit: limit, now: microsecondDate(now))
    }

    func storedLevel(_ account: Account, _ kind: GuessKind) async throws -> Double? {
        try await pool.query(
            "SELECT level FROM failed_guesses WHERE account_id = \(account.id.rawValue) AND kind = \(kind.rawValue)"
        ).first?.decode(Double.self, "level")
    }

    func testTheSignInRecordCarriesTheLevelAndAFailureAddsOneDrainedByTime() async throws {
        let account = try await storedPasswordAccount()
        let passwords = storage.passwordCredentials
        let none = try await passwords.signInRecord(normalizedEmail: "ada@example.com")
        XCTAssertNil(try XCTUnwrap(none).failedGuesses)
        let start = microsecondDate(Date())
        try await storage.failedGuesses.countFailedGuess(charge(account, at: start))
        try await storage.failedGuesses.countFailedGuess(charge(account, at: start))
        let read = try await passwords.signInRecord(normalizedEmail: "ada@example.com")
        XCTAssertEqual(read?.failedGuesses, FailedGuesses(level: 2, updatedAt: start))
        // 720 s drain ten guesses of fifty an hour: from 2 to 0, then one more.
        try await storage.failedGuesses.countFailedGuess(charge(account, at: start.addingTimeInterval(720)))
        let level = try await storedLevel(account, .password)
        XCTAssertEqual(try XCTUnwrap(level), 1, accuracy: 1e-9)
        // A replica whose clock is behind drains nothing and leaves the later time.
        try await storage.failedGuesses.countFailedGuess(charge(account, at: start.addingTimeInterval(600)))
        let behind = try await passwords.signInRecord(normalizedEmail: "ada@example.com")
        XCTAssertEqual(try XCTUnwrap(behind?.failedGuesses?.level), 2, accuracy: 1e-9)
        XCTAssertEqual(behind?.failedGuesses?.updatedAt, start.addingTimeInterval(720))
        // Codes are another budget.
        let codeLevel = try await storedLevel(account, .code)
        XCTAssertNil(codeLevel)
        let target = try await storage.recovery.target(normalizedEmail: "ada@example.com")
        XCTAssertNil(try XCTUnwrap(target).failedCodeGuesses)
    }

    func testRacingClaimsNeverPassTheCapacity() async throws {
        let account = try await storedPasswordAccount()
        let now = microsecondDate(Date())
        _ = try await pool.query(
            """
            INSERT INTO failed_guesses (account_id, kind, level, updated_at)
            VALUES (\(account.id.rawValue), 'password', 30, \(now))
            """)
        let guesses = storage.failedGuesses
        let charge = charge(account, at: now)
        let claimed = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<60 { group.addTask { (try? await guesses.claimGuess(charge)) ?? false } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        XCTAssertEqual(claimed, 20, "from 30 to the capacity of 50")
        let level = try await storedLevel(account, .password)
        XCTAssertEqual(try XCTUnwrap(level), 50, accuracy: 1e-9)
        // A failure counted without a claim may pass the capacity (it is refused first only when read as full).
        try await guesses.countFailedGuess(charge)
        let over = try await storedLevel(account, .password)
        XCTAssertEqual(try XCTUnwrap(over), 51, accuracy: 1e-9)
        // 144 s later two have drained: one claim has room, the next has not.
        let later = self.charge(account, at: now.addingTimeInterval(144))
        let first = try await guesses.claimGuess(later)
        let second = try await guesses.claimGuess(later)
        XCTAssertEqual([first, second], [true, false])
    }

    func testAnEmailCodeAttemptClaimsItsPlaceInTheCodeBudgetOrIsNotTried() async throws {
        let account = try await storedPasswordAccount()
        let found = try await storage.recovery.target(normalizedEmail: "ada@example.com")
        let target = try XCTUnwrap(found)
        let now = microsecondDate(Date())
        let delivery = EmailCodeDelivery(
            code: EmailCode(
                id: UUID(), accountID: account.id, emailID: target.emailID, purpose: .recovery, salt: randomBytes(16),
                codeDigest: randomBytes(32), digestKeyID: "0123456789abcdef", attempts: 0, createdAt: now,
                expiresAt: now.addingTimeInterval(600)),
            message: OutboxMessage(
                id: UUID(), recipient: target.address, template: .recoveryCode,
                code: .sealed(keyID: "0123456789abcdef", box: randomBytes(36)), expiresAt: now.addingTimeInterval(600),
                createdAt: now))
        try await storage.recovery.issue(delivery)
        let codeCharge = charge(account, .code, at: now)
        let attempt = try await storage.recovery.attempt(
            emailID: target.emailID, purpose: .recovery, maximumAttempts: 5, claiming: codeCharge)
        XCTAssertEqual(attempt?.attempts, 1)
        let read = try await storage.recovery.target(normalizedEmail: "ada@example.com")
        XCTAssertEqual(read?.failedCodeGuesses, FailedGuesses(level: 1, updatedAt: now))
        let first = try await storage.recovery.firstEmail(of: account.id)
        XCTAssertEqual(first?.failedCodeGuesses, FailedGuesses(level: 1, updatedAt: now))
        let passwordLevel = try await storedLevel(account, .password)
        XCTAssertNil(passwordLevel, "the password's budget is apart")
        // With the code budget full the code is not tried: its attempts stay as they were.
        _ = try await pool.query(
            "UPDATE failed_guesses SET level = 50 WHERE account_id = \(account.id.rawValue) AND kind = 'code'")
        let refused = try await storage.recovery.attempt(
            emailID: target.emailID, purpose: .recovery, maximumAttempts: 5, claiming: codeCharge)
        XCTAssertNil(refused)
        let attempts = try await pool.query("SELECT attempts FROM email_codes WHERE id = \(delivery.code.id)")
        XCTAssertEqual(try attempts.first?.decode(Int.self, "attempts"), 1)
        // A recovery-code failure counts in the same budget, and the row goes with the account.
        try await storage.failedGuesses.countFailedGuess(charge(account, .code, at: now.addingTimeInterval(3600)))
        let level = try await storedLevel(account, .code)
        XCTAssertEqual(try XCTUnwrap(level), 1, accuracy: 1e-9)
        _ = try await pool.query("DELETE FROM accounts WHERE id = \(account.id.rawValue)")
        let left = try await pool.query("SELECT count(*) AS n FROM failed_guesses").first?.decode(Int.self, "n")
        XCTAssertEqual(left, 0)
    }
}
