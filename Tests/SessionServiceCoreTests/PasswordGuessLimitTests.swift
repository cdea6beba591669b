import Crypto
import Domain
import Foundation
import InMemoryStorage
import Observability
import PasswordHashing
import SessionIssuance
import SessionServiceCore
import Synchronization
import UseCaseTestSupport
import XCTest

/// The failed password sign-ins an account may have (`GuessLimit`), against the in-memory store: what a sign-in
/// costs in store calls when it succeeds and when it fails, the lock that refuses even the right password, the
/// claim near the budget's end, and the time it lasts.
final class PasswordGuessLimitTests: XCTestCase {
    static let parameters = PasswordHasher.Parameters(memoryKiB: 256, iterations: 1, parallelism: 1)
    static let password = "correct horse battery"

    let clock = TestClock()
    let log = MemoryLogSink()
    var store: InMemoryAccounts!
    var hashing: PasswordHashingPool!
    var useCases: SessionUseCases!

    override func setUp() {
        store = InMemoryAccounts(clock: clock.read, failure: StoreDown())
        hashing = PasswordHashingPool(hasher: PasswordHasher(parameters: Self.parameters), threadCount: 2)
        useCases = SessionUseCases(
            accounts: store, passwords: store, failedGuesses: store, sessions: store, hashing: hashing,
            random: RecordingRandom(), sessionLifetime: 3600, clock: clock.read,
            logger: Logger(service: "session-service", sink: log), metrics: MetricsRegistry())
    }

    override func tearDown() {
        hashing.shutdown()
    }

    func signUp() async throws -> AccountID {
        try await useCases.createPasswordAccount(email: "ada@example.com", password: Self.password, displayName: "Ada")
    }

    func signIn(_ password: String) async throws {
        _ = try await useCases.signInWithPassword(email: "ada@example.com", password: password)
    }

    func level(_ accountID: AccountID) -> Double? {
        store.state.withLock { $0.failedGuesses[FailedGuessKey(accountID: accountID, kind: .password)]?.level }
    }

    func calls() -> [InMemoryAccounts.Operation] {
        store.state.withLock { state in
            defer { state.calls = [] }
            return state.calls
        }
    }

    func testASuccessReadsTheBudgetWithTheRecordAndAFailureCountsInOneCall() async throws {
        let id = try await signUp()
        _ = calls()
        try await signIn(Self.password)
        XCTAssertEqual(calls(), [.signInRecord, .completePasswordSignIn], "nothing extra on success")
        await assertThrowsDomainError(.invalidCredentials) { try await self.signIn("wrong password") }
        XCTAssertEqual(calls(), [.signInRecord, .countFailedGuess], "one write for a failure")
        XCTAssertEqual(level(id), 1)
        // An unknown address has no budget to count against.
        await assertThrowsDomainError(.invalidCredentials) {
            _ = try await self.useCases.signInWithPassword(email: "grace@example.com", password: "wrong password")
        }
        XCTAssertEqual(calls(), [.signInRecord])
    }

    func testFiftyWrongPasswordsLockTheAccountAgainstTheRightOneUntilAGuessDrains() async throws {
        let id = try await signUp()
        for attempt in 0..<50 {
            await assertThrowsDomainError(.invalidCredentials, "attempt \(attempt)") {
                try await self.signIn("wrong password \(attempt)")
            }
        }
        XCTAssertEqual(try XCTUnwrap(level(id)), 50, accuracy: 1e-9)
        _ = calls()
        for password in ["wrong password", Self.password] {
            let refusal = await assertThrowsDomainError(.rateLimited, password) { try await self.signIn(password) }
            XCTAssertEqual(refusal?.reason, "too_many_failed_guesses")
            XCTAssertEqual(refusal?.retryAfterSeconds, 72)
        }
        XCTAssertEqual(calls(), [.signInRecord, .signInRecord], "refused unchecked, and nothing written")
        XCTAssertEqual(store.state.withLock { $0.sessions.count }, 0)
        XCTAssertTrue(log.lines.contains { $0.contains("reason=too_many_failed_guesses") }, "\(log.lines)")

        // One guess drains every 72 s: then the right password signs in, having claimed its place.
        clock.advance(by: 60)
        let refusal = await assertThrowsDomainError(.rateLimited) { try await self.signIn(Self.password) }
        XCTAssertEqual(refusal?.retryAfterSeconds, 12)
        clock.advance(by: 12)
        _ = calls()
        try await signIn(Self.password)
        XCTAssertEqual(calls(), [.signInRecord, .claimGuess, .completePasswordSignIn])
        XCTAssertEqual(try XCTUnwrap(level(id)), 50, accuracy: 1e-9)
        // An hour later the budget is whole again.
        clock.advance(by: 3600)
        await assertThrowsDomainError(.invalidCredentials) { try await self.signIn("wrong password") }
        XCTAssertEqual(try XCTUnwrap(level(id)), 1, accuracy: 1e-9)
    }

    func testNearTheEndAGuessClaimsItsPlaceBeforeItIsCheckedAndIsCountedOnce() async throws {
        let id = try await signUp()
        store.state.withLock {
            $0.failedGuesses[FailedGuessKey(accountID: id, kind: .password)] = FailedGuesses(
                level: 30, updatedAt: clock.now)
        }
        _ = calls()
        await assertThrowsDomainError(.invalidCredentials) { try await self.signIn("wrong password") }
        XCTAssertEqual(calls(), [.signInRecord, .claimGuess], "claimed first, so not counted again")
        XCTAssertEqual(try XCTUnwrap(level(id)), 31, accuracy: 1e-9)
        // A claim that finds no room (another replica took the last place since the read) refuses the guess.
        store.state.withLock {
            $0.failedGuesses[FailedGuessKey(accountID: id, kind: .password)] = FailedGuesses(
                level: 48.5, updatedAt: clock.now)
        }
        let stale = FailedGuessRacer(store: store, levelAfterRead: 50)
        let racing = SessionUseCases(
            accounts: store, passwords: store, failedGuesses: stale, sessions: store, hashing: hashing,
            random: RecordingRandom(), sessionLifetime: 3600, clock: clock.read,
            logger: Logger(service: "session-service", sink: log), metrics: MetricsRegistry())
        let refusal = await assertThrowsDomainError(.rateLimited) {
            _ = try await racing.signInWithPassword(email: "ada@example.com", password: Self.password)
        }
        XCTAssertEqual(refusal?.retryAfterSeconds, 72)
        XCTAssertEqual(store.state.withLock { $0.sessions.count }, 0)
    }

    func testASmallerLimitAndAStoreThatCannotCountFailsClosed() async throws {
        useCases = SessionUseCases(
            accounts: store, passwords: store, failedGuesses: store, sessions: store, hashing: hashing,
            random: RecordingRandom(), sessionLifetime: 3600, clock: clock.read,
            logger: Logger(service: "session-service", sink: log), metrics: MetricsRegistry(),
            guessLimit: GuessLimit(limit: 6, period: 600))
        _ = try await signUp()
        for _ in 0..<3 { await assertThrowsDomainError(.invalidCredentials) { try await self.signIn("wrong") } }
        let refusal = await assertThrowsDomainError(.rateLimited) { try await self.signIn(Self.password) }
        XCTAssertEqual(refusal?.retryAfterSeconds, 200)
        clock.advance(by: 1200)
        store.state.withLock { $0.failing = [.countFailedGuess] }
        await assertThrows(StoreDown()) { try await self.signIn("wrong") }
        store.state.withLock { $0.failing = [] }
        try await signIn(Self.password)
    }
}

/// A failed-guess store whose claims find the level another replica left after the sign-in read it.
struct FailedGuessRacer: FailedGuessRepository {
    let store: InMemoryAccounts
    let levelAfterRead: Double

    func countFailedGuess(_ charge: GuessCharge) async throws { try await store.countFailedGuess(charge) }
    func claimGuess(_ charge: GuessCharge) async throws -> Bool {
        store.state.withLock {
            $0.failedGuesses[FailedGuessKey(accountID: charge.accountID, kind: charge.kind)] = FailedGuesses(
                level: levelAfterRead, updatedAt: charge.now)
        }
        return try await store.claimGuess(charge)
    }
}
