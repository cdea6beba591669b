import Domain
import Foundation
import InMemoryStorage
import Synchronization
import UseCaseTestSupport
import XCTest

/// The in-memory store keeps the rules `PostgresStorageTests` check on the Postgres repositories, so use-case tests
/// against it mean what they would against the database.
final class InMemoryAccountsTests: XCTestCase {
    let clock = TestClock()
    var passkeys: InMemoryPasskeys!
    var store: InMemoryAccounts!

    override func setUp() {
        passkeys = InMemoryPasskeys()
        store = InMemoryAccounts(passkeys: passkeys, clock: clock.read, failure: StoreDown())
    }

    // MARK: Fixtures

    func makeAccount(name: String = "Ada") -> Account {
        Account(id: .random(), displayName: name, userHandle: randomHandle(), createdAt: clock.now)
    }

    func randomHandle() -> UserHandle { UserHandle((0..<32).map { _ in UInt8.random(in: 0...255) })! }

    func email(_ address: String, of account: Account, at offset: TimeInterval = 0) -> AccountEmail {
        AccountEmail(accountID: account.id, address: EmailAddress(address)!, createdAt: clock.now + offset)
    }

    func password(of account: Account, hash: String = "$argon2id$v=19$m=256,t=1,p=1$c2FsdA$aGFzaA")
        -> PasswordCredential
    {
        PasswordCredential(accountID: account.id, passwordHash: hash, createdAt: clock.now, updatedAt: clock.now)
    }

    func passkey(of account: Account, credentialID: [UInt8] = [1, 2, 3]) -> PasskeyCredential {
        PasskeyCredential(
            id: UUID(), credentialID: CredentialID(credentialID)!, accountID: account.id, publicKey: [0xA5],
            algorithm: -7, signCount: 0, backupEligible: false, backedUp: false, uvInitialized: true, transports: [],
            aaguid: UUID(), attestationFormat: "none", cloneWarning: false, name: "Key", createdAt: clock.now,
            lastUsedAt: nil)
    }

    func storedPasswordAccount(_ address: String = "ada@example.com") async throws -> Account {
        let account = makeAccount()
        try await store.createPasswordAccount(
            account, email: email(address, of: account), password: password(of: account))
        return account
    }

    func registration(for account: Account, expiresIn lifetime: TimeInterval = 600) -> AccountRegistration {
        AccountRegistration(
            id: .random(), prospectiveAccountID: account.id, userHandle: account.userHandle, email: nil,
            displayName: nil, challenge: Array(repeating: 7, count: 32), createdAt: clock.now,
            expiresAt: clock.now + lifetime, consumedAt: nil, completedAt: nil)
    }

    func challenge(for account: Account, expiresIn lifetime: TimeInterval = 300) -> RegistrationChallenge {
        RegistrationChallenge(
            id: .random(), accountID: account.id, challenge: Array(repeating: 9, count: 32), mode: .modal,
            createdAt: clock.now, expiresAt: clock.now + lifetime, consumedAt: nil)
    }

    func session(of account: Account, createdAt: Date, lifetime: TimeInterval = 3_600) -> AuthenticationSession {
        AuthenticationSession(
            id: .random(), accountID: account.id, tokenDigest: (0..<32).map { _ in UInt8.random(in: 0...255) },
            authenticationMethod: .password, createdAt: createdAt, expiresAt: createdAt + lifetime, revokedAt: nil)
    }

    var snapshot: InMemoryAccounts.State { store.state.withLock { $0 } }

    // MARK: Accounts and emails

    func testAPasswordAccountIsWholeAndAnEmailBelongsToOneAccount() async throws {
        let ada = try await storedPasswordAccount("Ada@Example.com")
        let found = try await store.account(id: ada.id)
        XCTAssertEqual(found, ada)
        let record = try await store.signInRecord(normalizedEmail: "ada@example.com")
        XCTAssertEqual(
            record,
            PasswordSignInRecord(accountID: ada.id, displayName: "Ada", passwordHash: password(of: ada).passwordHash))
        let asTyped = try await store.signInRecord(normalizedEmail: "Ada@Example.com")
        XCTAssertNil(asTyped, "looked up by the normalized form only")

        let impostor = makeAccount(name: "Impostor")
        await assertThrowsDomainError(.emailTaken) {
            try await self.store.createPasswordAccount(
                impostor, email: self.email(" ADA@example.COM", of: impostor), password: self.password(of: impostor))
        }
        XCTAssertNil(snapshot.accounts[impostor.id], "half-written account")
        XCTAssertNil(snapshot.passwords[impostor.id])
        let grace = try await storedPasswordAccount("grace@example.com")
        await assertThrowsDomainError(.emailTaken) {
            try await self.store.add(self.email("ada@EXAMPLE.com", of: grace))
        }
        let gracesEmails = try await store.emails(of: grace.id)
        XCTAssertEqual(gracesEmails.map(\.email), ["grace@example.com"])
    }

    func testEmailsAreOldestFirstAndTheSummaryCountsEverything() async throws {
        let ada = try await storedPasswordAccount("b@example.com")
        try await store.add(email("a@example.com", of: ada, at: 5))
        try await store.add(email("c@example.com", of: ada, at: -5))
        try await passkeys.add(passkey(of: ada))
        let emails = try await store.emails(of: ada.id)
        XCTAssertEqual(emails.map(\.email), ["c@example.com", "b@example.com", "a@example.com"])
        let summary = try await store.summary(id: ada.id)
        XCTAssertEqual(
            summary,
            AccountSummary(
                account: ada, emails: ["c@example.com", "b@example.com", "a@example.com"], hasPassword: true,
                passkeyCount: 1))
        let unknown = try await store.summary(id: .random())
        XCTAssertNil(unknown)
    }

    func testAnUpsertReplacesTheHashAndKeepsTheCreationTime() async throws {
        let ada = try await storedPasswordAccount()
        var replacement = password(of: ada, hash: "$argon2id$v=19$m=512,t=1,p=1$bmV3$bmV3aGFzaA")
        replacement.createdAt = clock.now + 100
        replacement.updatedAt = clock.now + 100
        try await store.upsert(replacement)
        let stored = try await store.credential(of: ada.id)
        XCTAssertEqual(stored?.passwordHash, replacement.passwordHash)
        XCTAssertEqual(stored?.updatedAt, clock.now + 100)
        XCTAssertEqual(stored?.createdAt, clock.now)
    }

    func testRowsOfAnUnknownAccountAreRefused() async throws {
        let stranger = makeAccount()
        await assertThrows(InMemoryConstraintViolation("account_emails_account_id_fkey")) {
            try await self.store.add(self.email("x@example.com", of: stranger))
        }
        await assertThrows(InMemoryConstraintViolation("password_credentials_account_id_fkey")) {
            try await self.store.upsert(self.password(of: stranger))
        }
        await assertThrows(InMemoryConstraintViolation("authentication_sessions_account_id_fkey")) {
            try await self.store.add(self.session(of: stranger, createdAt: self.clock.now))
        }
        await assertThrows(InMemoryConstraintViolation("passkey_registration_challenges_account_id_fkey")) {
            try await self.store.registrationChallenges.add(self.challenge(for: stranger))
        }
        XCTAssertTrue(snapshot.emails.isEmpty && snapshot.passwords.isEmpty && snapshot.sessions.isEmpty)
    }

    // MARK: Passkey accounts

    func testAPasskeyAccountCompletesItsConsumedRegistrationOnce() async throws {
        let grace = makeAccount(name: "Grace")
        let pending = registration(for: grace)
        try await store.accountRegistrations.add(pending)
        await assertThrowsDomainError(.challengeUnavailable, "not consumed yet") {
            try await self.store.createPasskeyAccount(
                grace, email: nil, credential: self.passkey(of: grace), completing: pending.id)
        }
        _ = try await store.accountRegistrations.consume(id: pending.id)
        let someoneElse = makeAccount()
        await assertThrowsDomainError(.challengeUnavailable, "another prospective account") {
            try await self.store.createPasskeyAccount(
                someoneElse, email: nil, credential: self.passkey(of: someoneElse), completing: pending.id)
        }

        clock.advance(by: 3)
        try await store.createPasskeyAccount(
            grace, email: email("grace@example.com", of: grace), credential: passkey(of: grace), completing: pending.id)
        XCTAssertEqual(snapshot.accounts[grace.id], grace)
        XCTAssertEqual(snapshot.accountRegistrations[pending.id]?.completedAt, clock.now)
        let owner = try await passkeys.find(credentialID: CredentialID([1, 2, 3])!)
        XCTAssertEqual(owner?.userHandle, grace.userHandle, "the passkey's owner is known to sign-in")
        let summary = try await store.summary(id: grace.id)
        XCTAssertEqual(summary?.hasPassword, false)
        XCTAssertEqual(summary?.passkeyCount, 1)

        let again = makeAccount()
        await assertThrowsDomainError(.challengeUnavailable, "completed") {
            try await self.store.createPasskeyAccount(
                again, email: nil, credential: self.passkey(of: again, credentialID: [4]), completing: pending.id)
        }
    }

    func testAPasskeyAccountWithATakenEmailOrPasskeyLeavesNothingBehind() async throws {
        let existing = try await storedPasswordAccount("taken@example.com")
        try await passkeys.add(passkey(of: existing, credentialID: [9, 9]))
        for (address, credentialID, expected) in [
            ("taken@example.com", [1], DomainError.Code.emailTaken),
            ("fresh@example.com", [9, 9], .credentialAlreadyRegistered),
        ] as [(String, [UInt8], DomainError.Code)] {
            let account = makeAccount()
            let pending = registration(for: account)
            try await store.accountRegistrations.add(pending)
            _ = try await store.accountRegistrations.consume(id: pending.id)
            await assertThrowsDomainError(expected) {
                try await self.store.createPasskeyAccount(
                    account, email: self.email(address, of: account),
                    credential: self.passkey(of: account, credentialID: credentialID), completing: pending.id)
            }
            XCTAssertNil(snapshot.accounts[account.id], "half-written account")
            XCTAssertNil(snapshot.accountRegistrations[pending.id]?.completedAt, "the registration stays open")
            XCTAssertNil(passkeys.state.withLock { $0.accounts[account.id] })
        }
        XCTAssertEqual(passkeys.state.withLock { $0.credentials.count }, 1)
    }

    // MARK: Ceremony rows

    func testARegistrationChallengeIsConsumedOnceByItsAccountBeforeItExpires() async throws {
        let owner = try await storedPasswordAccount("owner@example.com")
        let other = try await storedPasswordAccount("other@example.com")
        let live = challenge(for: owner)
        let expiring = challenge(for: owner, expiresIn: 10)
        try await store.registrationChallenges.add(live)
        try await store.registrationChallenges.add(expiring)

        let challenges = store.registrationChallenges
        let foreign = try await challenges.consume(id: live.id, accountID: other.id)
        XCTAssertEqual(foreign, .unavailable)
        let unknown = try await challenges.consume(id: .random(), accountID: owner.id)
        XCTAssertEqual(unknown, .unavailable)
        clock.advance(by: 10)
        let expired = try await challenges.consume(id: expiring.id, accountID: owner.id)
        XCTAssertEqual(expired, .unavailable, "one that expires now is expired")
        var consumed = live
        consumed.consumedAt = clock.now
        let owners = try await challenges.consume(id: live.id, accountID: owner.id)
        XCTAssertEqual(owners, .consumed(consumed), "the foreign attempt did not spend it")
        let again = try await challenges.consume(id: live.id, accountID: owner.id)
        XCTAssertEqual(again, .unavailable)

        let sweptAtExpiry = try await challenges.deleteEnded(before: clock.now, limit: 1_000)
        XCTAssertEqual(sweptAtExpiry, 0, "deleted only once expired or consumed before the cutoff")
        let oneBatch = try await challenges.deleteEnded(before: clock.now + 1, limit: 1)
        XCTAssertEqual(oneBatch, 1, "a batch takes at most its limit")
        let swept = try await challenges.deleteEnded(before: clock.now + 1, limit: 1_000)
        XCTAssertEqual(swept, 1, "the expired one and the consumed one, one per batch")
        XCTAssertEqual(Array(snapshot.registrationChallenges.keys), [])
    }

    func testAnAccountRegistrationIsConsumedOnceBeforeItExpires() async throws {
        let pending = registration(for: makeAccount(), expiresIn: 60)
        let expiring = registration(for: makeAccount(), expiresIn: 30)
        try await store.accountRegistrations.add(pending)
        try await store.accountRegistrations.add(expiring)
        await assertThrows(InMemoryConstraintViolation("passkey_account_registrations_pkey")) {
            try await self.store.accountRegistrations.add(pending)
        }
        clock.advance(by: 30)
        let registrations = store.accountRegistrations
        let expired = try await registrations.consume(id: expiring.id)
        XCTAssertEqual(expired, .unavailable)
        let unknown = try await registrations.consume(id: .random())
        XCTAssertEqual(unknown, .unavailable)
        var consumed = pending
        consumed.consumedAt = clock.now
        let first = try await registrations.consume(id: pending.id)
        XCTAssertEqual(first, .consumed(consumed))
        let second = try await registrations.consume(id: pending.id)
        XCTAssertEqual(second, .unavailable)
        let swept = try await registrations.deleteEnded(before: clock.now + 1, limit: 1_000)
        XCTAssertEqual(swept, 2, "the expired one and the consumed one")
    }

    func testOfManyRacingConsumersExactlyOneWins() async throws {
        let pending = registration(for: makeAccount())
        try await store.accountRegistrations.add(pending)
        let registrations = store.accountRegistrations
        let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    if case .consumed = try await registrations.consume(id: pending.id) { return true }
                    return false
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        XCTAssertEqual(wins, 1)
    }

    // MARK: Sessions

    func testLiveSessionsRevocationAndDeletingEndedOnes() async throws {
        let ada = try await storedPasswordAccount()
        let grace = try await storedPasswordAccount("grace@example.com")
        let old = session(of: ada, createdAt: clock.now - 3_000)
        let newer = session(of: ada, createdAt: clock.now - 10)
        let sameTime = session(of: ada, createdAt: clock.now - 10)
        let short = session(of: ada, createdAt: clock.now - 100, lifetime: 100)
        let gracesSession = session(of: grace, createdAt: clock.now)
        for session in [old, newer, sameTime, short, gracesSession] { try await store.add(session) }
        await assertThrows(InMemoryConstraintViolation("authentication_sessions_pkey")) {
            var copy = self.session(of: ada, createdAt: self.clock.now)
            copy.id = old.id
            try await self.store.add(copy)
        }

        let tied = [newer, sameTime].sorted { $0.id.description < $1.id.description }
        let live = try await store.liveSessions(of: ada.id, at: clock.now)
        XCTAssertEqual(live, tied + [old], "newest first, then by ID")
        let ended = try await store.find(id: short.id)
        XCTAssertEqual(ended, short, "found even when ended")

        let foreign = try await store.revoke(id: gracesSession.id, of: ada.id, at: clock.now)
        XCTAssertFalse(foreign, "another account's")
        let expired = try await store.revoke(id: short.id, of: ada.id, at: clock.now)
        XCTAssertFalse(expired)
        let revoked = try await store.revoke(id: old.id, of: ada.id, at: clock.now)
        XCTAssertTrue(revoked)
        let again = try await store.revoke(id: old.id, of: ada.id, at: clock.now + 1)
        XCTAssertFalse(again, "already revoked")
        XCTAssertEqual(snapshot.sessions[old.id]?.revokedAt, clock.now)

        // Ended strictly before the cutoff: `short` expired at now, `old` was revoked at now.
        let deletedAtNow = try await store.deleteEnded(before: clock.now, limit: 1_000)
        XCTAssertEqual(deletedAtNow, 0)
        let deleted = try await store.deleteEnded(before: clock.now + 1, limit: 1_000)
        XCTAssertEqual(deleted, 2)
        XCTAssertEqual(Set(snapshot.sessions.keys), [newer.id, sameTime.id, gracesSession.id])
    }

    // MARK: Failure injection

    /// Every operation, made to fail, throws the store's failure and changes nothing.
    func testEveryOperationCanBeMadeToFail() async throws {
        let ada = try await storedPasswordAccount()
        let pending = registration(for: makeAccount())
        try await store.accountRegistrations.add(pending)
        let stored = session(of: ada, createdAt: clock.now)
        try await store.add(stored)
        let before = snapshot

        for operation in InMemoryAccounts.Operation.allCases {
            store.state.withLock { $0.failing = [operation] }
            await assertThrows(StoreDown(), "\(operation)") { try await self.call(operation, ada, pending, stored) }
            let after = snapshot
            XCTAssertEqual(after.calls.last, operation)
            XCTAssertTrue(
                after.accounts == before.accounts && after.emails == before.emails
                    && after.passwords == before.passwords && after.sessions == before.sessions
                    && after.registrationChallenges == before.registrationChallenges
                    && after.accountRegistrations == before.accountRegistrations,
                "\(operation) wrote while failing")
        }
    }

    private func call(
        _ operation: InMemoryAccounts.Operation, _ account: Account, _ pending: AccountRegistration,
        _ session: AuthenticationSession
    ) async throws {
        let newcomer = makeAccount()
        switch operation {
        case .createPasswordAccount:
            try await store.createPasswordAccount(
                newcomer, email: email("new@example.com", of: newcomer), password: password(of: newcomer))
        case .createPasskeyAccount:
            try await store.createPasskeyAccount(
                newcomer, email: nil, credential: passkey(of: newcomer), completing: pending.id)
        case .account: _ = try await store.account(id: account.id)
        case .enabledAccount: _ = try await store.enabledAccount(id: account.id)
        case .summary: _ = try await store.summary(id: account.id)
        case .rename: _ = try await store.rename(id: account.id, to: "Ada L.")
        case .addEmail: try await store.add(email("second@example.com", of: account))
        case .emails: _ = try await store.emails(of: account.id)
        case .findEmail: _ = try await store.find(normalizedEmail: "ada@example.com")
        case .upsertPassword:
            try await store.upsert(password(of: account, hash: "$argon2id$v=19$m=8,t=1,p=1$c2FsdA$aA"))
        case .password: _ = try await store.credential(of: account.id)
        case .signInRecord: _ = try await store.signInRecord(normalizedEmail: "ada@example.com")
        case .completePasswordSignIn:
            _ = try await store.completeSignIn(
                self.session(of: account, createdAt: clock.now), verifiedHash: "x", replacement: "y", at: clock.now)
        case .removePassword: try await store.removePassword(of: account.id)
        case .countFailedGuess:
            try await store.countFailedGuess(
                GuessCharge(accountID: account.id, kind: .password, limit: .standard, now: clock.now))
        case .claimGuess:
            _ = try await store.claimGuess(
                GuessCharge(accountID: account.id, kind: .password, limit: .standard, now: clock.now))
        case .addSession: try await store.add(self.session(of: account, createdAt: clock.now))
        case .findSession: _ = try await store.find(id: session.id)
        case .liveSessions: _ = try await store.liveSessions(of: account.id, at: clock.now)
        case .revokeSession: _ = try await store.revoke(id: session.id, of: account.id, at: clock.now)
        case .deleteEndedSessions: _ = try await store.deleteEnded(before: clock.now + 10_000, limit: 1_000)
        case .addRegistrationChallenge: try await store.registrationChallenges.add(challenge(for: account))
        case .consumeRegistrationChallenge:
            _ = try await store.registrationChallenges.consume(id: .random(), accountID: account.id)
        case .deleteEndedRegistrationChallenges:
            _ = try await store.registrationChallenges.deleteEnded(before: clock.now + 10_000, limit: 1_000)
        case .addAccountRegistration: try await store.accountRegistrations.add(registration(for: newcomer))
        case .consumeAccountRegistration: _ = try await store.accountRegistrations.consume(id: pending.id)
        case .deleteEndedAccountRegistrations:
            _ = try await store.accountRegistrations.deleteEnded(before: clock.now + 10_000, limit: 1_000)
        }
    }
}
