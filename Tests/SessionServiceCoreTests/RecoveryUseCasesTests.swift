import AccountRecovery
import Crypto
import Domain
import Foundation
import InMemoryStorage
import Observability
import SessionIssuance
import Synchronization
import UseCaseTestSupport
import XCTest

@testable import SessionServiceCore

/// `RecoveryUseCases` without processes: verifying an address, starting and finishing a recovery with an email code
/// or a recovery code, every refusal alike to the caller, the guess budget, and stores that fail, against in-memory
/// ports with a fixed clock.
final class RecoveryUseCasesTests: XCTestCase {
    static let keys = SecretKeyRing(keys: [Array(repeating: 3, count: 32)])!
    /// Two failed guesses fill the budget; the second claims its place before it is checked.
    static let guessLimit = GuessLimit(limit: 4, period: 3600)

    let clock = TestClock()
    let log = MemoryLogSink()
    var accounts: InMemoryAccounts!
    var recovery: InMemoryRecovery!
    var useCases: RecoveryUseCases!

    override func setUp() {
        accounts = InMemoryAccounts(clock: clock.read, failure: StoreDown())
        recovery = InMemoryRecovery(accounts: accounts, clock: clock.read, failure: StoreDown())
        useCases = makeUseCases(revokesOtherSessions: true)
    }

    func makeUseCases(revokesOtherSessions: Bool) -> RecoveryUseCases {
        RecoveryUseCases(
            recovery: recovery, failedGuesses: accounts, random: RecordingRandom(), keys: Self.keys,
            revokesOtherSessions: revokesOtherSessions, clock: clock.read,
            logger: Logger(service: "session-service", sink: log), guessLimit: Self.guessLimit)
    }

    // MARK: Fixtures

    /// An account with one address, verified or not, and `sessions` live sessions.
    func account(_ address: String = "ada@example.com", verified: Bool = true, sessions: Int = 0) throws -> AccountID {
        let id = AccountID.random()
        try accounts.addAccount(
            Account(
                id: id, displayName: "Ada", userHandle: UserHandle(SecureRandom().bytes(count: 16))!,
                createdAt: clock.now))
        let email = AccountEmail(accountID: id, address: EmailAddress(address)!, createdAt: clock.now)
        accounts.state.withLock { $0.emails[email.normalizedEmail] = email }
        if verified { recovery.markVerified(emailID: email.id) }
        for _ in 0..<sessions {
            let session = AuthenticationSession(
                id: .random(), accountID: id, tokenDigest: SecureRandom().bytes(count: 32),
                authenticationMethod: .passkey,
                createdAt: clock.now, expiresAt: clock.now.addingTimeInterval(3600), revokedAt: nil)
            accounts.state.withLock { $0.sessions[session.id] = session }
        }
        return id
    }

    var outbox: [OutboxMessage] { recovery.state.withLock { $0.outbox } }

    /// The code the newest queued message carries, opened as the outbox worker opens it.
    func lastMailedCode() throws -> String {
        let message = try XCTUnwrap(outbox.last)
        guard case .code(let code) = OneTimeCodes.open(message, keys: Self.keys) else {
            XCTFail("the message carries no code it can open")
            throw StoreDown()
        }
        return code
    }

    func isVerified(_ address: String) -> Bool {
        let emailID = accounts.state.withLock { $0.emails[address]?.id }
        return recovery.state.withLock { state in emailID.map { state.verifiedEmails[$0] != nil } ?? false }
    }

    func liveSessions(of accountID: AccountID) -> [AuthenticationSession] {
        let now = clock.now
        return accounts.state.withLock { $0.sessions.values.filter { $0.accountID == accountID && $0.isLive(at: now) } }
    }

    func failedCodeGuesses(of accountID: AccountID) -> Double {
        accounts.state.withLock { $0.failedGuesses[FailedGuessKey(accountID: accountID, kind: .code)]?.level ?? 0 }
    }

    var decoys: Int { recovery.state.withLock { $0.decoyAttempts.values.reduce(0, +) } }

    func audited(_ event: AuditEvent, _ fragment: String = "") -> Int {
        log.lines.filter { $0.contains("event=\(event.rawValue) ") && (fragment.isEmpty || $0.contains(fragment)) }
            .count
    }

    /// Waits (briefly: the work is in memory) until `condition` holds.
    func eventually(_ condition: () -> Bool) async {
        for _ in 0..<1000 where !condition() { try? await Task.sleep(for: .milliseconds(1)) }
    }

    // MARK: Email verification

    func testAVerificationCodeMailedToTheAddressVerifiesIt() async throws {
        let id = try account(verified: false)
        try await useCases.requestVerification(of: id)
        XCTAssertEqual(outbox.map(\.recipient), ["ada@example.com"])
        XCTAssertEqual(outbox.first?.template, .emailVerification)
        try await useCases.verifyEmail(of: id, code: try lastMailedCode())
        XCTAssertTrue(isVerified("ada@example.com"))
        XCTAssertEqual(audited(.emailVerified), 1)
        // Verified now: asking again mails nothing, and any code is accepted as done.
        try await useCases.requestVerification(of: id)
        XCTAssertEqual(outbox.count, 1)
        try await useCases.verifyEmail(of: id, code: "00000000")
    }

    func testANewVerificationCodeReplacesTheEarlierOne() async throws {
        let id = try account(verified: false)
        try await useCases.requestVerification(of: id)
        let first = try lastMailedCode()
        try await useCases.requestVerification(of: id)
        let second = try lastMailedCode()
        XCTAssertNotEqual(first, second)
        await assertThrowsDomainError(.invalidCode) { try await self.useCases.verifyEmail(of: id, code: first) }
        try await useCases.verifyEmail(of: id, code: second)
        XCTAssertTrue(isVerified("ada@example.com"))
    }

    func testVerificationRefusesAMalformedAWrongAnExpiredAndAnOverusedCode() async throws {
        let id = try account(verified: false)
        await assertThrowsDomainError(.invalidRequest) { try await self.useCases.verifyEmail(of: id, code: "1234") }
        try await useCases.requestVerification(of: id)
        let code = try lastMailedCode()
        let wrong = code == "11111111" ? "22222222" : "11111111"
        await assertThrowsDomainError(.invalidCode) { try await self.useCases.verifyEmail(of: id, code: wrong) }
        XCTAssertEqual(recovery.state.withLock { $0.codes.values.first?.attempts }, 1, "the attempt is counted")
        XCTAssertEqual(failedCodeGuesses(of: id), 1, "and claimed in the account's budget")
        clock.advance(by: OneTimeCodes.lifetime + 1)
        await assertThrowsDomainError(.invalidCode, "expired") {
            try await self.useCases.verifyEmail(of: id, code: code)
        }
        XCTAssertFalse(isVerified("ada@example.com"))
        XCTAssertEqual(audited(.emailVerificationFailed, "reason=invalid_code"), 2)
    }

    func testAFullGuessBudgetRefusesEvenTheRightCodeUntried() async throws {
        let id = try account(verified: false)
        try await useCases.requestVerification(of: id)
        let code = try lastMailedCode()
        accounts.state.withLock {
            $0.failedGuesses[FailedGuessKey(accountID: id, kind: .code)] = FailedGuesses(level: 2, updatedAt: clock.now)
        }
        await assertThrowsDomainError(.invalidCode) { try await self.useCases.verifyEmail(of: id, code: code) }
        XCTAssertEqual(audited(.emailVerificationFailed, "reason=too_many_failed_guesses"), 1)
        XCTAssertFalse(recovery.state.withLock { $0.calls.contains(.attempt) }, "the code was not tried")
        XCTAssertFalse(isVerified("ada@example.com"))
    }

    func testAnAccountWithoutAnAddressHasNothingToVerify() async throws {
        let id = AccountID.random()
        await assertThrowsDomainError(.notFound) { try await self.useCases.requestVerification(of: id) }
        await assertThrowsDomainError(.invalidCode) { try await self.useCases.verifyEmail(of: id, code: "12345678") }
    }

    // MARK: Starting a recovery

    func testAStartMailsACodeOnlyToAVerifiedAddress() async throws {
        let id = try account()
        _ = try account("bob@example.com", verified: false)
        try await useCases.issueRecoveryCode(to: EmailAddress("ADA@example.com")!)
        try await useCases.issueRecoveryCode(to: EmailAddress("bob@example.com")!)
        try await useCases.issueRecoveryCode(to: EmailAddress("nobody@example.com")!)
        XCTAssertEqual(outbox.map(\.recipient), ["ada@example.com"])
        XCTAssertEqual(outbox.first?.template, .recoveryCode)
        XCTAssertEqual(recovery.state.withLock { $0.codes.values.map(\.accountID) }, [id])
        XCTAssertEqual(audited(.recoveryStarted, "outcome=no_verified_address"), 2)
    }

    func testAStartAnswersAtOnceAndDoesItsWorkAfterwards() async throws {
        _ = try account()
        await assertThrowsDomainError(.invalidRequest) {
            try await self.useCases.startRecovery(email: "not an address")
        }
        try await useCases.startRecovery(email: "ada@example.com")
        await eventually { outbox.count == 1 }
        XCTAssertEqual(outbox.map(\.recipient), ["ada@example.com"])
        // A start whose lookup fails still answered alike; the failure is logged, not shown.
        recovery.state.withLock { $0.failing = [.target] }
        try await useCases.startRecovery(email: "ada@example.com")
        await eventually { log.lines.contains { $0.contains("recovery.start_failed") } }
        XCTAssertTrue(log.lines.contains { $0.contains("recovery.start_failed") })
        XCTAssertEqual(outbox.count, 1)
    }

    func testStartsInFlightAreBounded() {
        let starts = StartsInFlight()
        for _ in 0..<StartsInFlight.limit { XCTAssertTrue(starts.enter()) }
        XCTAssertFalse(starts.enter(), "the limit is reached")
        starts.leave()
        XCTAssertTrue(starts.enter(), "a place freed is taken again")
    }

    // MARK: Finishing with an email code

    func testAnEmailCodeBecomesARecoverySessionAndSignsTheAccountOutElsewhere() async throws {
        let id = try account(sessions: 2)
        try await useCases.issueRecoveryCode(to: EmailAddress("ada@example.com")!)
        let code = try lastMailedCode()
        let issued = try await useCases.finishRecovery(email: "ada@example.com", code: code, recoveryCode: nil)
        XCTAssertEqual(issued.session.accountID, id)
        XCTAssertEqual(issued.session.authenticationMethod, .recovery)
        XCTAssertEqual(issued.session.expiresAt, clock.now.addingTimeInterval(RecoveryUseCases.recoverySessionLifetime))
        XCTAssertNil(issued.refreshToken, "a recovery session only registers a passkey")
        XCTAssertEqual(issued.displayName, "Ada")
        XCTAssertEqual(liveSessions(of: id).map(\.id), [issued.session.id], "the other sessions are revoked")
        XCTAssertEqual(audited(.recoverySessionIssued, "sessions.revoked=2"), 1)
        // Consumed: the same code again fails like any wrong one.
        await assertThrowsDomainError(.invalidCode) {
            _ = try await self.useCases.finishRecovery(email: "ada@example.com", code: code, recoveryCode: nil)
        }
        XCTAssertEqual(audited(.recoveryFailed, "reason=no_live_code"), 1)
    }

    func testWithoutRevocationTheOtherSessionsStay() async throws {
        let id = try account(sessions: 2)
        useCases = makeUseCases(revokesOtherSessions: false)
        try await useCases.issueRecoveryCode(to: EmailAddress("ada@example.com")!)
        _ = try await useCases.finishRecovery(email: "ada@example.com", code: try lastMailedCode(), recoveryCode: nil)
        XCTAssertEqual(liveSessions(of: id).count, 3)
    }

    func testMalformedRequestsAreRefusedBeforeAnyLookup() async throws {
        for (email, code, recoveryCode) in [
            ("nope", "12345678", nil), ("ada@example.com", nil, nil),
            ("ada@example.com", "12345678", "ABCD-EFGH-JKMN-PQRS"),
            ("ada@example.com", "1234", nil), ("ada@example.com", nil, "not a code"),
        ] as [(String, String?, String?)] {
            await assertThrowsDomainError(.invalidRequest, "\(email) \(code ?? "-") \(recoveryCode ?? "-")") {
                _ = try await self.useCases.finishRecovery(email: email, code: code, recoveryCode: recoveryCode)
            }
        }
        XCTAssertEqual(recovery.state.withLock { $0.calls }, [])
    }

    func testAWrongCodeAnUnknownAddressAndAnUnverifiedOneFailAlike() async throws {
        let id = try account()
        _ = try account("bob@example.com", verified: false)
        try await useCases.issueRecoveryCode(to: EmailAddress("ada@example.com")!)
        let code = try lastMailedCode()
        let wrong = code == "11111111" ? "22222222" : "11111111"
        var messages: [String] = []
        for (email, given) in [("ada@example.com", wrong), ("nobody@example.com", code), ("bob@example.com", code)] {
            let error = await assertThrowsDomainError(.invalidCode, email) {
                _ = try await self.useCases.finishRecovery(email: email, code: given, recoveryCode: nil)
            }
            messages.append(error?.message ?? "")
        }
        XCTAssertEqual(Set(messages).count, 1, "one answer for every failure")
        XCTAssertEqual(failedCodeGuesses(of: id), 1, "the wrong code is claimed in the account's budget")
        XCTAssertEqual(decoys, 2, "an unknown and an unverified address each cost a decoy attempt")
        XCTAssertEqual(audited(.recoveryFailed, "reason=wrong_code"), 1)
        XCTAssertEqual(audited(.recoveryFailed, "reason=unknown_address"), 1)
        XCTAssertEqual(audited(.recoveryFailed, "reason=no_live_code"), 1)
        XCTAssertEqual(liveSessions(of: id), [])
    }

    func testAFullBudgetRefusesTheRightCodeWithADecoy() async throws {
        let id = try account()
        try await useCases.issueRecoveryCode(to: EmailAddress("ada@example.com")!)
        let code = try lastMailedCode()
        accounts.state.withLock {
            $0.failedGuesses[FailedGuessKey(accountID: id, kind: .code)] = FailedGuesses(level: 2, updatedAt: clock.now)
        }
        await assertThrowsDomainError(.invalidCode) {
            _ = try await self.useCases.finishRecovery(email: "ada@example.com", code: code, recoveryCode: nil)
        }
        XCTAssertEqual(decoys, 1)
        XCTAssertEqual(audited(.recoveryFailed, "reason=too_many_failed_guesses"), 1)
        // An hour later the budget has drained, but the code expired long before: it is simply gone.
        clock.advance(by: 3600)
        await assertThrowsDomainError(.invalidCode) {
            _ = try await self.useCases.finishRecovery(email: "ada@example.com", code: code, recoveryCode: nil)
        }
        XCTAssertEqual(audited(.recoveryFailed, "reason=no_live_code"), 1)
    }

    func testAStoreThatFailsIsNotAWrongCode() async throws {
        _ = try account()
        recovery.state.withLock { $0.failing = [.target] }
        await assertThrows(StoreDown()) {
            _ = try await self.useCases.finishRecovery(email: "ada@example.com", code: "12345678", recoveryCode: nil)
        }
        XCTAssertEqual(audited(.recoveryFailed), 0)
    }

    // MARK: Recovery codes

    func testARecoveryCodeWorksOnceAndANewSetReplacesTheOld() async throws {
        let id = try account(sessions: 1)
        let codes = try await useCases.generateRecoveryCodes(for: id)
        XCTAssertEqual(codes.count, RecoveryCodes.count)
        XCTAssertEqual(Set(codes).count, codes.count)
        XCTAssertEqual(audited(.recoveryCodesGenerated, "count=10"), 1)
        let issued = try await useCases.finishRecovery(email: "Ada@Example.com", code: nil, recoveryCode: codes[3])
        XCTAssertEqual(issued.session.authenticationMethod, .recovery)
        XCTAssertEqual(liveSessions(of: id).map(\.id), [issued.session.id])
        await assertThrowsDomainError(.invalidCode, "used") {
            _ = try await self.useCases.finishRecovery(email: "ada@example.com", code: nil, recoveryCode: codes[3])
        }
        let fresh = try await useCases.generateRecoveryCodes(for: id)
        await assertThrowsDomainError(.invalidCode, "replaced") {
            _ = try await self.useCases.finishRecovery(email: "ada@example.com", code: nil, recoveryCode: codes[4])
        }
        // Those two failures filled the budget; once it drains, a code of the new set works.
        await assertThrowsDomainError(.invalidCode, "budget full") {
            _ = try await self.useCases.finishRecovery(email: "ada@example.com", code: nil, recoveryCode: fresh[0])
        }
        clock.advance(by: Self.guessLimit.period)
        _ = try await useCases.finishRecovery(email: "ada@example.com", code: nil, recoveryCode: fresh[0])
    }

    func testAWrongRecoveryCodeCountsAFailedGuessAndAnUnknownAddressADecoy() async throws {
        let id = try account()
        let codes = try await useCases.generateRecoveryCodes(for: id)
        let other = try await useCases.generateRecoveryCodes(for: try account("bob@example.com"))
        await assertThrowsDomainError(.invalidCode, "another account's code") {
            _ = try await self.useCases.finishRecovery(email: "ada@example.com", code: nil, recoveryCode: other[0])
        }
        XCTAssertEqual(failedCodeGuesses(of: id), 1)
        await assertThrowsDomainError(.invalidCode, "an unknown address") {
            _ = try await self.useCases.finishRecovery(email: "eve@example.com", code: nil, recoveryCode: codes[0])
        }
        XCTAssertEqual(decoys, 1)
        // The second failure claims its place first, then fills the budget: the right code is refused unchecked.
        await assertThrowsDomainError(.invalidCode) {
            _ = try await self.useCases.finishRecovery(email: "ada@example.com", code: nil, recoveryCode: other[1])
        }
        await assertThrowsDomainError(.invalidCode, "budget full") {
            _ = try await self.useCases.finishRecovery(email: "ada@example.com", code: nil, recoveryCode: codes[0])
        }
        XCTAssertEqual(audited(.recoveryFailed, "reason=too_many_failed_guesses"), 1)
        XCTAssertEqual(liveSessions(of: id), [])
    }
}
