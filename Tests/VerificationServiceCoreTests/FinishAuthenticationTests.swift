import Crypto
import Domain
import Foundation
import InMemoryStorage
import Observability
import SessionIssuance
import SoftwareAuthenticator
import Synchronization
import VerificationServiceCore
import WebAuthn
import XCTest

/// Registration challenges from a table, each consumable once; authentication challenges are the passkey store's,
/// which the sign-in's one write consumes.
final class TableChallenges: ChallengeConsumer, Sendable {
    let registrations = Mutex<[ChallengeID: [UInt8]]>([:])
    let store: InMemoryPasskeys

    init(store: InMemoryPasskeys) { self.store = store }

    func issueAuthentication() async throws -> (ChallengeID, [UInt8]) {
        let challenge = AuthenticationChallenge(
            id: .random(), challenge: SecureRandom().bytes(count: 32), createdAt: Date(),
            expiresAt: Date().addingTimeInterval(300), consumedAt: nil)
        try await store.add(challenge)
        return (challenge.id, challenge.challenge)
    }

    func issueRegistration() -> (ChallengeID, [UInt8]) {
        let id = ChallengeID.random()
        let bytes = SecureRandom().bytes(count: 32)
        registrations.withLock { $0[id] = bytes }
        return (id, bytes)
    }

    func consumeRegistration(challengeID: ChallengeID, accountID: AccountID) async throws
        -> (challenge: [UInt8], mode: RegistrationMode)
    {
        guard let bytes = registrations.withLock({ $0.removeValue(forKey: challengeID) }) else {
            throw DomainError(.challengeUnavailable, "unavailable")
        }
        return (bytes, .modal)
    }

    func consumeAccountRegistration(id: AccountRegistrationID) async throws -> PendingAccountRegistration {
        throw DomainError(.challengeUnavailable, "unavailable")
    }

    func consumeAuthentication(challengeID: ChallengeID) async throws -> [UInt8] {
        switch try await store.consume(id: challengeID) {
        case .consumed(let row): return row.challenge
        case .unavailable: throw DomainError(.challengeUnavailable, "unavailable")
        }
    }
}

/// `PasskeyCeremonies.finishAuthentication` without processes: every step in between made to fail, and the
/// compare-and-set retry, against in-memory ports.
final class FinishAuthenticationTests: XCTestCase {
    static let rpID = "example.com"
    static let origin = "https://example.com"

    var challenges: TableChallenges!
    var passkeys: InMemoryPasskeys!
    var lastUse: LastUseRecorder!
    var ceremonies: PasskeyCeremonies!
    var cache: CredentialCache!
    let log = MemoryLogSink()
    let accountID = AccountID.random()

    override func setUp() {
        reset()
    }

    func reset() {
        passkeys = InMemoryPasskeys()
        challenges = TableChallenges(store: passkeys)
        lastUse = LastUseRecorder(repository: passkeys)
        cache = CredentialCache()
        ceremonies = makeCeremonies()
    }

    func makeCeremonies() -> PasskeyCeremonies {
        PasskeyCeremonies(
            challenges: challenges, accounts: UnusedAccounts(), passkeys: passkeys, signIns: passkeys,
            sessions: SessionIssuer(random: SecureRandom(), lifetime: 3600), lastUse: lastUse,
            relyingPartyID: Self.rpID,
            origins: OriginPolicy(allowedOrigins: [Self.origin]), credentials: cache,
            logger: Logger(service: "verification-service", sink: log), metrics: MetricsRegistry())
    }

    /// A registered passkey of `accountID`.
    func registered(zeroCounter: Bool) async throws -> SoftwareAuthenticator {
        let handle = UserHandle(SecureRandom().bytes(count: 16))!
        passkeys.addAccount(accountID, handle: handle, displayName: "Ada")
        let authenticator = SoftwareAuthenticator(userHandle: handle.bytes, keepsZeroCounter: zeroCounter)
        let (id, challenge) = challenges.issueRegistration()
        _ = try await ceremonies.finishRegistration(
            accountID: accountID, challengeID: id,
            response: authenticator.makeRegistration(challenge: challenge, rpID: Self.rpID, origin: Self.origin))
        return authenticator
    }

    func signIn(_ authenticator: inout SoftwareAuthenticator) async throws -> PasskeyCeremonies.SignIn {
        let (id, challenge) = try await challenges.issueAuthentication()
        let assertion = authenticator.makeAssertion(challenge: challenge, rpID: Self.rpID, origin: Self.origin)
        return try await ceremonies.finishAuthentication(challengeID: id, response: assertion)
    }

    func stored(_ authenticator: SoftwareAuthenticator) -> PasskeyCredential? {
        passkeys.state.withLock { $0.credentials[CredentialID(authenticator.credentialID)!] }
    }

    var sessions: [AuthenticationSession] { passkeys.state.withLock { $0.sessions } }
    var unconsumedChallenges: Int {
        passkeys.state.withLock { $0.challenges.values.filter { $0.consumedAt == nil }.count }
    }

    func assertThrows(
        _ code: DomainError.Code, reason: String? = nil, file: StaticString = #filePath, line: UInt = #line,
        _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            XCTFail("no error", file: file, line: line)
        } catch let error as DomainError {
            XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
            if let reason { XCTAssertEqual(error.reason, reason, file: file, line: line) }
        } catch {
            XCTFail("\(error)", file: file, line: line)
        }
    }

    func testACountingPasskeysUseCommitsWithItsSession() async throws {
        var authenticator = try await registered(zeroCounter: false)
        let signIn = try await signIn(&authenticator)
        XCTAssertEqual(signIn.accountID, accountID)
        XCTAssertEqual(signIn.session.displayName, "Ada")
        XCTAssertEqual(signIn.session.session.authenticationMethod, .passkey)
        let presented = try XCTUnwrap(SessionTokens.parse(signIn.session.token))
        XCTAssertEqual(presented.id, signIn.session.session.id, "the token names its session")
        XCTAssertEqual(presented.digest, signIn.session.session.tokenDigest)
        XCTAssertEqual(sessions, [signIn.session.session])
        XCTAssertEqual(stored(authenticator)?.signCount, 1, "the moved count is written with the session")
        XCTAssertEqual(lastUse.pendingCount, 0, "nothing is left for later")
    }

    func testASyncedPasskeysUnchangedUseLeavesItsRowAndQueuesItsTime() async throws {
        var authenticator = try await registered(zeroCounter: true)
        let before = stored(authenticator)
        let signIn = try await signIn(&authenticator)
        XCTAssertEqual(sessions.count, 1)
        XCTAssertEqual(stored(authenticator), before, "the row is not written in the sign-in")
        XCTAssertEqual(lastUse.pendingCount, 1)
        try await lastUse.flush()
        XCTAssertEqual(stored(authenticator)?.lastUsedAt, signIn.session.session.createdAt)
        XCTAssertEqual(lastUse.pendingCount, 0)
    }

    func testAFailedCredentialReadWritesNothingAndLeavesTheChallenge() async throws {
        var authenticator = try await registered(zeroCounter: false)
        passkeys.state.withLock { $0.failing = [.find] }
        await assertThrows(.unavailable) { _ = try await self.signIn(&authenticator) }
        XCTAssertEqual(sessions, [])
        XCTAssertEqual(stored(authenticator)?.signCount, 0)
        XCTAssertEqual(unconsumedChallenges, 1, "nothing ran past the read")
    }

    func testAFailedCheckWritesNothingButSpendsTheChallenge() async throws {
        var authenticator = try await registered(zeroCounter: true)
        let (id, challenge) = try await challenges.issueAuthentication()
        let assertion = authenticator.makeAssertion(
            challenge: challenge, rpID: Self.rpID, origin: "https://evil.example")
        await assertThrows(.invalidCredentials, reason: "origin_mismatch") {
            _ = try await self.ceremonies.finishAuthentication(challengeID: id, response: assertion)
        }
        XCTAssertEqual(sessions, [])
        XCTAssertEqual(lastUse.pendingCount, 0)
        XCTAssertFalse(passkeys.state.withLock { $0.calls.contains(.completeSignIn) })
        XCTAssertEqual(unconsumedChallenges, 0, "a failed sign-in's challenge is single-use too")
        // The challenge is gone now: the right assertion for it is refused as unavailable.
        let retry = authenticator.makeAssertion(challenge: challenge, rpID: Self.rpID, origin: Self.origin)
        await assertThrows(.challengeUnavailable) {
            _ = try await self.ceremonies.finishAuthentication(challengeID: id, response: retry)
        }
    }

    func testAnAssertionOverAnotherChallengeIsAMismatchAndSpendsTheIssuedOne() async throws {
        var authenticator = try await registered(zeroCounter: true)
        let (id, _) = try await challenges.issueAuthentication()
        let assertion = authenticator.makeAssertion(
            challenge: SecureRandom().bytes(count: 32), rpID: Self.rpID, origin: Self.origin)
        await assertThrows(.invalidCredentials, reason: "challenge_mismatch") {
            _ = try await self.ceremonies.finishAuthentication(challengeID: id, response: assertion)
        }
        XCTAssertEqual(sessions, [])
        XCTAssertEqual(unconsumedChallenges, 0)
    }

    func testAnUnavailableChallengeDecidesBeforeAFailedCheckOrAnUnknownPasskey() async throws {
        var authenticator = try await registered(zeroCounter: true)
        let (id, challenge) = try await challenges.issueAuthentication()
        _ = try await challenges.consumeAuthentication(challengeID: id)
        let wrongOrigin = authenticator.makeAssertion(
            challenge: challenge, rpID: Self.rpID, origin: "https://evil.example")
        await assertThrows(.challengeUnavailable) {
            _ = try await self.ceremonies.finishAuthentication(challengeID: id, response: wrongOrigin)
        }
        var stranger = SoftwareAuthenticator()
        let unknown = stranger.makeAssertion(challenge: challenge, rpID: Self.rpID, origin: Self.origin)
        await assertThrows(.challengeUnavailable) {
            _ = try await self.ceremonies.finishAuthentication(challengeID: id, response: unknown)
        }
        let (fresh, freshChallenge) = try await challenges.issueAuthentication()
        let unknownFresh = stranger.makeAssertion(challenge: freshChallenge, rpID: Self.rpID, origin: Self.origin)
        await assertThrows(.invalidCredentials) {
            _ = try await self.ceremonies.finishAuthentication(challengeID: fresh, response: unknownFresh)
        }
        XCTAssertEqual(unconsumedChallenges, 0)
    }

    func testAFailedWriteRecordsNoUseAndSaysTheChallengeIsSpent() async throws {
        for zeroCounter in [false, true] {
            reset()
            var authenticator = try await registered(zeroCounter: zeroCounter)
            let before = stored(authenticator)
            passkeys.state.withLock { $0.failing = [.completeSignIn] }
            await assertThrows(.unavailable, reason: "challenge_spent") { _ = try await self.signIn(&authenticator) }
            XCTAssertEqual(sessions, [])
            XCTAssertEqual(stored(authenticator), before)
            XCTAssertEqual(lastUse.pendingCount, 0, "no last-use time for a sign-in that issued nothing")
            XCTAssertEqual(unconsumedChallenges, 0, "the challenge is spent: the client must start again")
            XCTAssertTrue(log.lines.contains { $0.contains("reason=not_recorded") })
        }
    }

    func testARowThatMovedOnIsReadAgainAndDecidedOnWhatIsStored() async throws {
        var authenticator = try await registered(zeroCounter: false)
        _ = try await signIn(&authenticator)  // cached now
        passkeys.state.withLock { $0.movedOnCompletions = 1 }
        _ = try await signIn(&authenticator)
        XCTAssertEqual(sessions.count, 2)
        XCTAssertEqual(passkeys.state.withLock { $0.calls.filter { $0 == .completeSignIn }.count }, 3)
        XCTAssertEqual(
            passkeys.state.withLock { $0.calls.filter { $0 == .find }.count }, 2,
            "the first sign-in's read, then the cached second reads once again")

        // Moved on at every attempt (three): refused as a concurrent use, nothing written, the challenge spent.
        passkeys.state.withLock { $0.movedOnCompletions = 3 }
        await assertThrows(.invalidCredentials) { _ = try await self.signIn(&authenticator) }
        XCTAssertEqual(sessions.count, 2)
        XCTAssertTrue(log.lines.contains { $0.contains("reason=concurrent_use") })
        XCTAssertEqual(unconsumedChallenges, 0)
    }

    func testARemovedPasskeyIsRefusedEvenFromTheCache() async throws {
        var authenticator = try await registered(zeroCounter: true)
        _ = try await signIn(&authenticator)
        XCTAssertEqual(cache.count, 1)
        // Removed behind this replica's back (another replica): the cached copy must not decide.
        passkeys.state.withLock { $0.credentials.removeAll() }
        await assertThrows(.invalidCredentials) { _ = try await self.signIn(&authenticator) }
        XCTAssertEqual(sessions.count, 1)
        XCTAssertEqual(cache.count, 0)
    }

    func testLastUseKeepsTheNewestTimeAndRequeuesAFailedBatch() async throws {
        let id = CredentialID([1, 2, 3])!
        let early = Date(timeIntervalSince1970: 1_000)
        let late = Date(timeIntervalSince1970: 2_000)
        lastUse.note(id, at: late)
        lastUse.note(id, at: early)
        XCTAssertEqual(lastUse.pendingCount, 1)
        passkeys.state.withLock { $0.failing = [.recordLastUse] }
        do {
            try await lastUse.flush()
            XCTFail("the failing batch was dropped silently")
        } catch {}
        XCTAssertEqual(lastUse.pendingCount, 1, "a failed batch goes back to the queue")
        let bounded = LastUseRecorder(repository: passkeys, capacity: 2)
        for byte in 0..<5 { bounded.note(CredentialID([UInt8(byte)])!, at: late) }
        XCTAssertEqual(bounded.pendingCount, 2, "the queue is bounded")
    }
}

/// Sign-in never touches `accounts` beyond the passkey's owner, which the passkey store answers.
struct UnusedAccounts: AccountRepository {
    func createPasswordAccount(_ account: Account, email: AccountEmail, password: PasswordCredential) async throws {
        XCTFail("unexpected")
    }
    func createPasskeyAccount(
        _ account: Account, email: AccountEmail?, credential: PasskeyCredential,
        completing registrationID: AccountRegistrationID, verification: EmailCodeDelivery?,
        session: AuthenticationSession?
    ) async throws { XCTFail("unexpected") }
    func account(id: AccountID) async throws -> Account? { nil }
    func enabledAccount(id: AccountID) async throws -> Account? { nil }
    func summary(id: AccountID) async throws -> AccountSummary? { nil }
    func rename(id: AccountID, to displayName: String) async throws -> Account? { nil }
}
