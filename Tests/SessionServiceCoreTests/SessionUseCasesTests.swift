import Crypto
import Domain
import Encoding
import Foundation
import InMemoryStorage
import Observability
import PasswordHashing
import SessionIssuance
import SessionServiceCore
import Synchronization
import UseCaseTestSupport
import XCTest

/// `SessionUseCases` without processes: sign-up, password sign-in (with the hash upgrade), validation, revocation,
/// listing and the summary, every refusal, and stores that fail, against in-memory ports with a fixed clock and a
/// real argon2id pool at cheap parameters.
final class SessionUseCasesTests: XCTestCase {
    static let sessionLifetime: TimeInterval = 3_600
    /// About a millisecond a hash; the production parameters are `PasswordHashingTests`' business.
    static let parameters = PasswordHasher.Parameters(memoryKiB: 256, iterations: 1, parallelism: 1)
    static let password = "correct horse battery"

    let clock = TestClock()
    let random = RecordingRandom()
    let log = MemoryLogSink()
    var store: InMemoryAccounts!
    var hashing: PasswordHashingPool!
    var useCases: SessionUseCases!

    override func setUp() {
        store = InMemoryAccounts(clock: clock.read, failure: StoreDown())
        hashing = PasswordHashingPool(hasher: PasswordHasher(parameters: Self.parameters), threadCount: 2)
        useCases = SessionUseCases(
            accounts: store, passwords: store, failedGuesses: store, sessions: store, hashing: hashing, random: random,
            sessionLifetime: Self.sessionLifetime, clock: clock.read,
            logger: Logger(service: "session-service", sink: log), metrics: MetricsRegistry(),
            codeKeys: SecretKeyRing(keys: [Array(repeating: 8, count: 32)]))
    }

    override func tearDown() {
        hashing.shutdown()
    }

    // MARK: Fixtures

    func signUp(_ email: String = "ada@example.com", name: String = "Ada") async throws -> AccountID {
        try await useCases.createPasswordAccount(email: email, password: Self.password, displayName: name)
    }

    func signIn(_ email: String = "ada@example.com") async throws -> SessionIssuer.IssuedSession {
        try await useCases.signInWithPassword(email: email, password: Self.password)
    }

    var sessions: [SessionID: AuthenticationSession] { store.state.withLock { $0.sessions } }
    var accountCount: Int { store.state.withLock { $0.accounts.count } }
    func calls(_ operation: InMemoryAccounts.Operation) -> Int {
        store.state.withLock { $0.calls.filter { $0 == operation }.count }
    }

    func storedHash(of accountID: AccountID) -> String? {
        store.state.withLock { $0.passwords[accountID]?.passwordHash }
    }

    /// Replaces the account's hash with one made at other argon2id parameters, as after a parameter change.
    func storeOutdatedHash(for accountID: AccountID) throws -> String {
        let outdated = try PasswordHasher(parameters: .init(memoryKiB: 128, iterations: 1, parallelism: 1))
            .hash(Self.password)
        store.state.withLock { $0.passwords[accountID]?.passwordHash = outdated }
        return outdated
    }

    // MARK: createPasswordAccount

    func testSignUpStoresTheAccountItsEmailAndAnArgon2idHashThatVerifies() async throws {
        let id = try await useCases.createPasswordAccount(
            email: "  Ada@Example.COM ", password: Self.password, displayName: "  Ada Lovelace ")

        let account = try XCTUnwrap(store.state.withLock { $0.accounts[id] })
        XCTAssertEqual(account.displayName, "Ada Lovelace")
        XCTAssertEqual(account.createdAt, clock.now)
        XCTAssertEqual(account.userHandle.bytes.count, 32)
        XCTAssertEqual(random.draws.first, account.userHandle.bytes, "the handle is the injected source's first draw")
        XCTAssertEqual(random.draws.dropFirst().map(\.count), [4, 16], "then the verification code and its salt")

        let emails = try await store.emails(of: id)
        XCTAssertEqual(emails.map(\.email), ["Ada@Example.COM"])
        XCTAssertEqual(emails.map(\.normalizedEmail), ["ada@example.com"])
        XCTAssertEqual(emails.map(\.createdAt), [clock.now])

        let password = try XCTUnwrap(store.state.withLock { $0.passwords[id] })
        XCTAssertTrue(password.passwordHash.hasPrefix("$argon2id$v=19$m=256,t=1,p=1$"), password.passwordHash)
        XCTAssertTrue(hashing.hasher.verify(Self.password, against: password.passwordHash))
        XCTAssertFalse(hashing.hasher.verify(Self.password + "!", against: password.passwordHash))
        XCTAssertEqual(password.createdAt, clock.now)
        XCTAssertEqual(password.updatedAt, clock.now)

        XCTAssertTrue(log.lines.contains { $0.contains("audit.account.created") && $0.contains("account.id=\(id)") })
        XCTAssertFalse(log.lines.contains { $0.contains(Self.password) }, "the password is never logged")
    }

    func testSignUpRefusesABadEmailNameOrPasswordAndWritesNothing() async throws {
        let longName = String(repeating: "x", count: DisplayName.maximumLength + 1)
        let longPassword = String(repeating: "a", count: PasswordHasher.maximumPasswordLength + 1)
        let refused: [(email: String, password: String, name: String, what: String)] = [
            ("ada", Self.password, "Ada", "no @"),
            ("", Self.password, "Ada", "no email"),
            ("ada@", Self.password, "Ada", "no domain"),
            ("ada@example.com", Self.password, "", "no name"),
            ("ada@example.com", Self.password, "   ", "a blank name"),
            ("ada@example.com", Self.password, longName, "a long name"),
            ("ada@example.com", Self.password, "Ada\u{0}", "a control character"),
            ("ada@example.com", "1234567", "Ada", "seven characters"),
            ("ada@example.com", String(repeating: "é", count: 7), "Ada", "seven characters in fourteen bytes"),
            ("ada@example.com", longPassword, "Ada", "1,025 bytes"),
            (
                "ada@example.com", String(repeating: "a", count: PasswordPolicy.lengths.upperBound + 1), "Ada",
                "257 characters"
            ),
            ("ada\u{2003}lovelace@example.com", Self.password, "Ada", "an em space in the address"),
            ("ada@example.com", Self.password, "\tAda", "a tab before the name"),
        ]
        for (email, password, name, what) in refused {
            await assertThrowsDomainError(.invalidRequest, what) {
                _ = try await self.useCases.createPasswordAccount(email: email, password: password, displayName: name)
            }
        }
        XCTAssertEqual(accountCount, 0)
        XCTAssertEqual(calls(.createPasswordAccount), 0, "refused before the store is asked")
    }

    func testRenameTrimsValidatesAndAudits() async throws {
        let id = try await signUp()
        let summary = try await useCases.rename(id, to: "  Ada L.  ")
        XCTAssertEqual(summary.account.displayName, "Ada L.")
        XCTAssertEqual(summary.emails, ["ada@example.com"])
        let session = try await signIn()
        XCTAssertEqual(session.displayName, "Ada L.")
        XCTAssertTrue(log.lines.contains { $0.contains("audit.account.renamed") && $0.contains("account.id=\(id)") })
        for bad in ["", "   ", "a\u{7}b", String(repeating: "n", count: 129)] {
            do {
                _ = try await useCases.rename(id, to: bad)
                XCTFail("accepted \(bad.debugDescription)")
            } catch let error as DomainError {
                XCTAssertEqual(error.code, .invalidRequest)
            }
        }
        let renamesBefore = calls(.rename)
        XCTAssertEqual(renamesBefore, 1, "a refused name reaches no store")
        do {
            _ = try await useCases.rename(.random(), to: "Nobody")
            XCTFail("renamed an account that does not exist")
        } catch let error as DomainError {
            XCTAssertEqual(error.code, .notFound)
        }
    }

    func testSignUpAcceptsPasswordsAtTheLimits() async throws {
        // The policy's bounds, in characters: 256 four-byte characters are the hasher's 1,024 bytes.
        let accepted = [
            "12345678", String(repeating: "é", count: 8),
            String(repeating: "a", count: PasswordPolicy.lengths.upperBound),
            String(repeating: "😀", count: PasswordPolicy.lengths.upperBound),
        ]
        for (index, password) in accepted.enumerated() {
            let id = try await useCases.createPasswordAccount(
                email: "user\(index)@example.com", password: password, displayName: "User")
            let hash = try XCTUnwrap(storedHash(of: id))
            XCTAssertTrue(hashing.hasher.verify(password, against: hash), "\(password.utf8.count) bytes")
        }
    }

    func testATakenEmailIsRefusedWhateverItsCaseAndWritesNothing() async throws {
        let ada = try await signUp("ada@example.com", name: "Ada")
        await assertThrowsDomainError(.emailTaken) {
            _ = try await self.useCases.createPasswordAccount(
                email: " ADA@Example.com", password: "another password", displayName: "Impostor")
        }
        let (accounts, passwords) = store.state.withLock { ($0.accounts, $0.passwords) }
        XCTAssertEqual(Array(accounts.keys), [ada])
        XCTAssertEqual(Array(passwords.keys), [ada])
    }

    // MARK: signInWithPassword

    func testTheRightPasswordIssuesASessionWhoseTokenOnlyItsDigestIsStored() async throws {
        let id = try await signUp()
        clock.advance(by: 30)
        let issued = try await useCases.signInWithPassword(email: " ADA@example.com ", password: Self.password)

        XCTAssertEqual(issued.displayName, "Ada")
        let session = issued.session
        XCTAssertEqual(session.accountID, id)
        XCTAssertEqual(session.authenticationMethod, .password)
        XCTAssertEqual(session.createdAt, clock.now)
        XCTAssertEqual(session.expiresAt, clock.now.addingTimeInterval(Self.sessionLifetime))
        XCTAssertNil(session.revokedAt)
        // The token is the session's ID, then a 32-byte secret drawn from the injected source; only the secret's
        // digest is stored.
        let tokenBytes = try XCTUnwrap(Base64URL.decode(issued.token))
        XCTAssertEqual(issued.token.utf8.count, 64)
        XCTAssertEqual(tokenBytes.count, 48)
        XCTAssertEqual(Array(tokenBytes.prefix(16)), withUnsafeBytes(of: session.id.rawValue.uuid) { Array($0) })
        XCTAssertEqual(Array(tokenBytes.suffix(32)), random.draws.last, "the secret is a draw of the injected source")
        XCTAssertEqual(session.tokenDigest, sha256(Array(tokenBytes.suffix(32))))
        XCTAssertEqual(sessions, [session.id: session])
        XCTAssertFalse(log.lines.contains { $0.contains(issued.token) }, "the token is never logged")
        XCTAssertTrue(
            log.lines.contains { $0.contains("audit.sign_in.succeeded") && $0.contains("session.id=\(session.id)") })
    }

    func testSessionIDsAreTimeOrdered() async throws {
        _ = try await signUp()
        var previous: SessionID?
        for _ in 0..<3 {
            let id = try await signIn().session.id
            let bytes = withUnsafeBytes(of: id.rawValue.uuid) { Array($0) }
            XCTAssertEqual(bytes[6] >> 4, 7, "a version 7 UUID")
            let milliseconds = bytes[0..<6].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            XCTAssertEqual(milliseconds, UInt64(clock.now.timeIntervalSince1970 * 1000), "its time is the clock's")
            if let previous { XCTAssertLessThan(previous.description, id.description) }
            previous = id
            clock.advance(by: 1)
        }
    }

    func testAWrongPasswordAnUnknownEmailAndMalformedInputFailAlike() async throws {
        _ = try await signUp()
        let attempts: [(email: String, password: String, what: String)] = [
            ("ada@example.com", Self.password + "!", "a wrong password"),
            ("ada@example.com", "", "an empty password"),
            ("grace@example.com", Self.password, "an unknown email"),
            ("ada", Self.password, "not an email"),
            ("ada@example.com", String(repeating: "a", count: PasswordHasher.maximumPasswordLength + 1), "too long"),
        ]
        var errors: [DomainError] = []
        for (email, password, what) in attempts {
            let error = await assertThrowsDomainError(.invalidCredentials, what) {
                _ = try await self.useCases.signInWithPassword(email: email, password: password)
            }
            if let error { errors.append(error) }
        }
        XCTAssertEqual(Set(errors.map(\.message)).count, 1, "one message for every failure: \(errors)")
        XCTAssertEqual(sessions, [:])
        XCTAssertEqual(calls(.upsertPassword), 0)
    }

    func testAnOutdatedHashIsReplacedAtTheNextRightSignInOnly() async throws {
        let id = try await signUp()
        let created = try XCTUnwrap(store.state.withLock { $0.passwords[id] })
        let outdated = try storeOutdatedHash(for: id)

        await assertThrowsDomainError(.invalidCredentials) {
            _ = try await self.useCases.signInWithPassword(email: "ada@example.com", password: "wrong password")
        }
        XCTAssertEqual(storedHash(of: id), outdated, "no upgrade without the right password")

        clock.advance(by: 60)
        _ = try await signIn()
        let upgraded = try XCTUnwrap(store.state.withLock { $0.passwords[id] })
        XCTAssertTrue(upgraded.passwordHash.hasPrefix("$argon2id$v=19$m=256,t=1,p=1$"), upgraded.passwordHash)
        XCTAssertTrue(hashing.hasher.verify(Self.password, against: upgraded.passwordHash))
        XCTAssertEqual(upgraded.updatedAt, clock.now)
        XCTAssertEqual(upgraded.createdAt, created.createdAt)

        clock.advance(by: 60)
        _ = try await signIn()
        XCTAssertEqual(storedHash(of: id), upgraded.passwordHash, "a current hash is not rewritten")
        XCTAssertEqual(store.state.withLock { $0.passwords[id]?.updatedAt }, upgraded.updatedAt)
        XCTAssertEqual(sessions.count, 2)
        XCTAssertEqual(calls(.upsertPassword), 0, "the upgrade is part of the sign-in's own write")
    }

    func testAFailedSignInWriteKeepsTheOldHashAndIssuesNothing() async throws {
        let id = try await signUp()
        let outdated = try storeOutdatedHash(for: id)
        store.state.withLock { $0.failing = [.completePasswordSignIn] }
        await assertThrows(StoreDown(), "completePasswordSignIn") { _ = try await self.signIn() }
        XCTAssertEqual(storedHash(of: id), outdated)
        XCTAssertEqual(sessions.count, 0)
    }

    func testALegacyBcryptHashSignsInOnceAndIsReplacedByArgon2id() async throws {
        let id = try await signUp()
        // bcrypt 4.3's hash of "correct horse" at cost 4.
        let legacy = "$2b$04$5uNMsxnFvuX4w0VUDBALxeNTxVjYRaRwHcmxu4BXakarvTzwkIi0C"
        store.state.withLock { $0.passwords[id]?.passwordHash = legacy }
        await assertThrowsDomainError(.invalidCredentials) {
            _ = try await self.useCases.signInWithPassword(email: "ada@example.com", password: "correct horsE")
        }
        XCTAssertEqual(storedHash(of: id), legacy)
        _ = try await useCases.signInWithPassword(email: "ada@example.com", password: "correct horse")
        let upgraded = try XCTUnwrap(storedHash(of: id))
        XCTAssertTrue(upgraded.hasPrefix("$argon2id$v=19$m=256,t=1,p=1$"), upgraded)
        XCTAssertTrue(hashing.hasher.verify("correct horse", against: upgraded))
        _ = try await useCases.signInWithPassword(email: "ada@example.com", password: "correct horse")
        XCTAssertEqual(sessions.count, 2)
    }

    func testAnUnreadableStoredHashFailsClosed() async throws {
        let id = try await signUp()
        store.state.withLock { $0.passwords[id]?.passwordHash = "{SSHA}not-a-known-format" }
        await assertThrowsDomainError(.invalidCredentials) { _ = try await self.signIn() }
        XCTAssertEqual(sessions.count, 0)
        XCTAssertEqual(storedHash(of: id), "{SSHA}not-a-known-format")
    }

    func testASignInWhosePasswordChangedMeanwhileIssuesNothing() async throws {
        let id = try await signUp()
        let verified = try XCTUnwrap(storedHash(of: id))
        let now = clock.now
        let session = SessionIssuer(random: SecureRandom(), lifetime: 60, clock: { now })
            .newSession(accountID: id, method: .password).session
        store.state.withLock { $0.passwords[id]?.passwordHash = "$argon2id$v=19$m=256,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2g" }
        let stored = try await store.completeSignIn(session, verifiedHash: verified, replacement: nil, at: clock.now)
        XCTAssertFalse(stored)
        XCTAssertEqual(sessions.count, 0)
    }

    // MARK: validate

    func testValidateAcceptsALiveSessionsTokenUntilItExpires() async throws {
        _ = try await signUp()
        let issued = try await signIn()
        let (session, displayName) = try await useCases.validate(token: issued.token)
        XCTAssertEqual(session, issued.session)
        XCTAssertEqual(displayName, "Ada")

        clock.advance(by: Self.sessionLifetime - 1)
        let (lastSecond, _) = try await useCases.validate(token: issued.token)
        XCTAssertEqual(lastSecond.id, issued.session.id)
        clock.advance(by: 1)
        await assertThrowsDomainError(.unauthenticated, "expired") {
            _ = try await self.useCases.validate(token: issued.token)
        }
    }

    func testValidateRefusesUnknownMalformedAndRevokedTokens() async throws {
        let id = try await signUp()
        let issued = try await signIn()

        await assertThrowsDomainError(.unauthenticated, "unknown") {
            _ = try await self.useCases.validate(token: Base64URL.encode(SecureRandom().bytes(count: 48)))
        }
        XCTAssertEqual(calls(.findSession), 1, "a well-formed token is looked up")
        let lookupsBefore = calls(.findSession)
        // The session's ID with another secret, and the secret with another session's ID: both refused.
        var bytes = try XCTUnwrap(Base64URL.decode(issued.token))
        bytes[47] ^= 0x01
        await assertThrowsDomainError(.unauthenticated, "another secret") {
            _ = try await self.useCases.validate(token: Base64URL.encode(bytes))
        }
        let other = try await signIn()
        let otherBytes = try XCTUnwrap(Base64URL.decode(other.token))
        let swapped = Array(otherBytes.prefix(16)) + Array(try XCTUnwrap(Base64URL.decode(issued.token)).suffix(32))
        await assertThrowsDomainError(.unauthenticated, "another session's ID") {
            _ = try await self.useCases.validate(token: Base64URL.encode(swapped))
        }
        let (otherSession, _) = try await useCases.validate(token: other.token)
        XCTAssertEqual(otherSession.id, other.session.id)
        let malformed = [
            "", "abc", issued.token + "A", String(issued.token.dropLast()), "!" + issued.token.dropFirst(),
            Base64URL.encode(SecureRandom().bytes(count: 31)), Base64URL.encode(SecureRandom().bytes(count: 32)),
        ]
        // The tampered tokens above were looked up (they are well formed); a malformed one never is.
        let lookupsBeforeMalformed = calls(.findSession)
        for token in malformed {
            await assertThrowsDomainError(.unauthenticated, token) {
                _ = try await self.useCases.validate(token: token)
            }
        }
        XCTAssertEqual(calls(.findSession), lookupsBeforeMalformed, "a token that cannot be ours is not looked up")
        XCTAssertEqual(lookupsBeforeMalformed - lookupsBefore, 3, "the two tampered tokens and the good one")

        try await useCases.revoke(sessionID: issued.session.id, of: id)
        await assertThrowsDomainError(.unauthenticated, "revoked") {
            _ = try await self.useCases.validate(token: issued.token)
        }
    }

    func testValidateRefusesASessionWhoseAccountIsGone() async throws {
        let id = try await signUp()
        let issued = try await signIn()
        store.state.withLock { _ = $0.accounts.removeValue(forKey: id) }
        await assertThrowsDomainError(.unauthenticated) { _ = try await self.useCases.validate(token: issued.token) }
    }

    func testValidateRefusesASessionOfADisabledAccountEvenWhileTheRowIsUnrevoked() async throws {
        let id = try await signUp()
        let issued = try await signIn()
        // A session the disable's revocation did not reach (issued by a sign-in that raced it) is still refused.
        store.state.withLock { _ = $0.disabledAccounts.insert(id) }
        XCTAssertNil(sessions[issued.session.id]?.revokedAt)
        await assertThrowsDomainError(.unauthenticated) { _ = try await self.useCases.validate(token: issued.token) }
    }

    // MARK: revoke, liveSessions, summary

    func testRevokeEndsOnlyTheAccountsOwnLiveSession() async throws {
        let ada = try await signUp("ada@example.com")
        _ = try await signUp("grace@example.com", name: "Grace")
        let adas = try await signIn("ada@example.com").session
        let graces = try await signIn("grace@example.com").session

        await assertThrowsDomainError(.notFound, "another account's") {
            try await self.useCases.revoke(sessionID: graces.id, of: ada)
        }
        XCTAssertNil(sessions[graces.id]?.revokedAt)
        await assertThrowsDomainError(.notFound, "unknown") {
            try await self.useCases.revoke(sessionID: .random(), of: ada)
        }

        clock.advance(by: 5)
        try await useCases.revoke(sessionID: adas.id, of: ada)
        XCTAssertEqual(sessions[adas.id]?.revokedAt, clock.now)
        XCTAssertTrue(
            log.lines.contains { $0.contains("audit.session.revoked") && $0.contains("session.id=\(adas.id)") })
        clock.advance(by: 5)
        await assertThrowsDomainError(.notFound, "already revoked") {
            try await self.useCases.revoke(sessionID: adas.id, of: ada)
        }
        XCTAssertEqual(sessions[adas.id]?.revokedAt, clock.now.addingTimeInterval(-5), "the first revocation stays")

        let expiring = try await signIn("ada@example.com").session
        clock.advance(by: Self.sessionLifetime)
        await assertThrowsDomainError(.notFound, "expired") {
            try await self.useCases.revoke(sessionID: expiring.id, of: ada)
        }
        XCTAssertNil(sessions[expiring.id]?.revokedAt)
    }

    func testLiveSessionsAreTheAccountsOwnNewestFirst() async throws {
        let ada = try await signUp("ada@example.com")
        _ = try await signUp("grace@example.com", name: "Grace")
        var adas: [AuthenticationSession] = []
        for _ in 0..<3 {
            adas.append(try await signIn("ada@example.com").session)
            _ = try await signIn("grace@example.com")
            clock.advance(by: 10)
        }
        try await useCases.revoke(sessionID: adas[1].id, of: ada)
        let live = try await useCases.liveSessions(of: ada)
        XCTAssertEqual(live.map(\.id), [adas[2].id, adas[0].id])

        clock.advance(by: Self.sessionLifetime - 30)  // the first expires now
        let later = try await useCases.liveSessions(of: ada)
        XCTAssertEqual(later.map(\.id), [adas[2].id])
        let none = try await useCases.liveSessions(of: .random())
        XCTAssertEqual(none, [])
    }

    func testSummaryCountsEmailsPasswordAndPasskeys() async throws {
        let id = try await signUp("ada@example.com", name: "Ada")
        try await store.add(
            AccountEmail(
                accountID: id, address: EmailAddress("Ada.Lovelace@Example.com")!,
                createdAt: clock.now.addingTimeInterval(1)))
        try await store.passkeys.add(
            PasskeyCredential(
                id: UUID(), credentialID: CredentialID([1, 2, 3])!, accountID: id, publicKey: [0xA5], algorithm: -7,
                signCount: 0, backupEligible: false, backedUp: false, uvInitialized: true, transports: [],
                aaguid: UUID(), attestationFormat: "none", cloneWarning: false, name: "Key", createdAt: clock.now,
                lastUsedAt: nil))
        let summary = try await useCases.summary(of: id)
        let account = try XCTUnwrap(store.state.withLock { $0.accounts[id] })
        XCTAssertEqual(
            summary,
            AccountSummary(
                account: account, emails: ["ada@example.com", "Ada.Lovelace@Example.com"], hasPassword: true,
                passkeyCount: 1))
        await assertThrowsDomainError(.notFound) { _ = try await self.useCases.summary(of: .random()) }
    }

    // MARK: removePassword

    func addPasskey(to id: AccountID, usedAt: Date?) async throws {
        try await store.passkeys.add(
            PasskeyCredential(
                id: UUID(), credentialID: CredentialID([UInt8.random(in: 0...255), 2, 3])!, accountID: id,
                publicKey: [0xA5], algorithm: -7, signCount: 0, backupEligible: false, backedUp: false,
                uvInitialized: true, transports: [], aaguid: UUID(), attestationFormat: "none", cloneWarning: false,
                name: "Key", createdAt: clock.now, lastUsedAt: usedAt))
    }

    func testThePasswordGoesOnlyOnceAPasskeyHasSignedIn() async throws {
        let id = try await signUp()
        await assertThrowsDomainError(.lastSignInMethod) { try await self.useCases.removePassword(of: id) }
        do {
            try await useCases.removePassword(of: id)
        } catch let error as DomainError {
            XCTAssertEqual(error.reason, PasswordRemovalRefusal.noPasskey)
        }
        try await addPasskey(to: id, usedAt: nil)
        do {
            try await useCases.removePassword(of: id)
            XCTFail("removed before a passkey sign-in")
        } catch let error as DomainError {
            XCTAssertEqual(error.code, .lastSignInMethod)
            XCTAssertEqual(error.reason, PasswordRemovalRefusal.passkeySignInRequired)
        }
        XCTAssertNotNil(storedHash(of: id))

        try await addPasskey(to: id, usedAt: clock.now)
        try await useCases.removePassword(of: id)
        XCTAssertNil(storedHash(of: id))
        await assertThrowsDomainError(.invalidCredentials) { _ = try await self.signIn() }
        // Without a password: not found, every time.
        await assertThrowsDomainError(.notFound) { try await self.useCases.removePassword(of: id) }
        await assertThrowsDomainError(.notFound) { try await self.useCases.removePassword(of: id) }
        await assertThrowsDomainError(.notFound) { try await self.useCases.removePassword(of: .random()) }
    }

    // MARK: Failing stores and a busy hashing pool

    func testAFailingStoreSurfacesItsErrorRatherThanARefusal() async throws {
        let id = try await signUp()
        let issued = try await signIn()
        let sessionsBefore = sessions
        let cases: [(InMemoryAccounts.Operation, () async throws -> Void)] = [
            (.createPasswordAccount, { _ = try await self.signUp("grace@example.com") }),
            (.signInRecord, { _ = try await self.signIn() }),
            (.completePasswordSignIn, { _ = try await self.signIn() }),
            (.findSession, { _ = try await self.useCases.validate(token: issued.token) }),
            (.enabledAccount, { _ = try await self.useCases.validate(token: issued.token) }),
            (.revokeSession, { try await self.useCases.revoke(sessionID: issued.session.id, of: id) }),
            (.liveSessions, { _ = try await self.useCases.liveSessions(of: id) }),
            (.summary, { _ = try await self.useCases.summary(of: id) }),
        ]
        for (operation, call) in cases {
            store.state.withLock { $0.failing = [operation] }
            await assertThrows(StoreDown(), "\(operation)", call)
        }
        XCTAssertEqual(accountCount, 1)
        XCTAssertEqual(sessions, sessionsBefore)
    }

    func testABusyHashingPoolIsRateLimitedAndWritesNothing() async throws {
        let id = try await signUp()
        hashing.shutdown()  // refuses every job, as a full queue does
        await assertThrowsDomainError(.rateLimited) { _ = try await self.signUp("grace@example.com") }
        await assertThrowsDomainError(.rateLimited) { _ = try await self.signIn() }
        await assertThrowsDomainError(.rateLimited, "unknown email") { _ = try await self.signIn("grace@example.com") }
        XCTAssertEqual(accountCount, 1)
        XCTAssertEqual(sessions, [:])
        XCTAssertNotNil(storedHash(of: id))
    }
}

/// The adoption gauges publish what the counts repository reads, and keep the last values when a read fails.
final class AdoptionGaugesTests: XCTestCase {
    final class Counts: SignInMethodCountRepository, Sendable {
        let next = Mutex<Result<SignInMethodCounts, DomainError>>(.success(SignInMethodCounts()))
        func counts() async throws -> SignInMethodCounts { try next.withLock { try $0.get() } }
    }

    func gauge(_ metrics: MetricsRegistry, _ method: String) -> String? {
        metrics.exposition().split(separator: "\n").first {
            $0.hasPrefix("passkey_accounts{sign_in_method=\"\(method)\"}")
        }
        .map { String($0.split(separator: " ").last ?? "") }
    }

    func testTheGaugesFollowTheCountsAndSurviveAFailedRead() async throws {
        let counts = Counts()
        let metrics = MetricsRegistry()
        let gauges = AdoptionGauges(
            counts: counts, metrics: metrics, logger: Logger(service: "test", sink: DiscardingSink()))
        counts.next.withLock { $0 = .success(SignInMethodCounts(passwordOnly: 7, both: 2, passkeyOnly: 1)) }
        try await gauges.refresh()
        XCTAssertEqual(gauge(metrics, "password_only"), "7")
        XCTAssertEqual(gauge(metrics, "both"), "2")
        XCTAssertEqual(gauge(metrics, "passkey_only"), "1")

        counts.next.withLock { $0 = .failure(DomainError(.unavailable, "down")) }
        do {
            try await gauges.refresh()
            XCTFail("a failed read was not reported")
        } catch {}
        XCTAssertEqual(gauge(metrics, "password_only"), "7", "the last values stay")

        counts.next.withLock { $0 = .success(SignInMethodCounts(passwordOnly: 6, both: 2, passkeyOnly: 2)) }
        try await gauges.refresh()
        XCTAssertEqual(gauge(metrics, "password_only"), "6")
        XCTAssertEqual(gauge(metrics, "passkey_only"), "2")
    }
}
