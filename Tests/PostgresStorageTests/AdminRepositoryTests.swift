import AdminAccess
import Crypto
import Domain
import Foundation
import Observability
import Postgres
import PostgresStorage
import PostgresTestSupport
import XCTest

/// `PostgresAdminRepository` on a real database: tokens and their use, the operators' changes (each with its audit
/// events, as the token that asked) and what they refuse, erasure, and the reads behind the admin API.
final class AdminRepositoryTests: StorageTestCase {
    var admin: PostgresAdminRepository!
    let operatorContext = AuditContext(
        requestID: "req-admin", clientAddress: nil, actor: .admin(tokenID: "0123456789abcdef"))

    override func setUp() async throws {
        try await super.setUp()
        admin = PostgresAdminRepository(pool: pool)
    }

    func asOperator<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        try await AuditContext.$current.withValue(operatorContext) { try await body() }
    }

    func events(_ type: AuditEvent, of account: Account) async throws -> [StoredAuditEvent] {
        try await admin.auditEvents(AuditEventQuery(accountID: account.id, types: [type.rawValue]))
    }

    func liveSessionCount(of account: Account) async throws -> Int {
        try await storage.sessions.liveSessions(of: account.id, at: Date()).count
    }

    func testATokenIsFoundByItsDigestAndItsUseIsRecordedAtMostOnceAMinute() async throws {
        let secret = AdminTokenSecret(random: SecureRandom())
        let created = microsecondDate()
        let token = AdminToken(
            id: secret.id, name: "ops", scopes: [.read, .write], createdBy: "cli:test", createdAt: created,
            expiresAt: nil)
        try await PostgresAdminTokenRepository(pool: pool).create(token, digest: secret.digest)
        let found = try await admin.token(digest: secret.digest)
        XCTAssertEqual(found?.scopes, [.read, .write])
        XCTAssertNil(found?.lastUsedAt)
        let unknown = try await admin.token(digest: sha256([1, 2, 3]))
        XCTAssertNil(unknown)
        let first = microsecondDate()
        try await admin.recordUse(of: secret.id, at: first)
        try await admin.recordUse(of: secret.id, at: first.addingTimeInterval(30))
        let used = try await admin.token(digest: secret.digest)
        XCTAssertEqual(used?.lastUsedAt, first, "a use within the minute is not written")
        try await admin.recordUse(of: secret.id, at: first.addingTimeInterval(61))
        let later = try await admin.token(digest: secret.digest)
        XCTAssertEqual(later?.lastUsedAt, first.addingTimeInterval(61))
    }

    func testRevokingSessionsTouchesOnlyTheLiveOnesOfThatAccountAndAuditsEachAsTheOperator() async throws {
        let account = try await storedPasswordAccount()
        let other = try await storedPasswordAccount(email: "bob@example.com")
        let sessions = [makeSession(for: account), makeSession(for: account), makeSession(for: account)]
        for session in sessions { try await storage.sessions.add(session) }
        try await storage.sessions.add(makeSession(for: other))
        let none = try await asOperator {
            try await admin.revokeSessions(of: account.id, sessionID: SessionID.random(), at: Date())
        }
        XCTAssertEqual(none, 0, "an unknown session")
        let theirs = try await asOperator {
            try await admin.revokeSessions(of: other.id, sessionID: sessions[0].id, at: Date())
        }
        XCTAssertEqual(theirs, 0, "another account's session")
        let one = try await asOperator {
            try await admin.revokeSessions(of: account.id, sessionID: sessions[0].id, at: Date())
        }
        XCTAssertEqual(one, 1)
        let rest = try await asOperator { try await admin.revokeSessions(of: account.id, sessionID: nil, at: Date()) }
        XCTAssertEqual(rest, 2)
        let again = try await asOperator { try await admin.revokeSessions(of: account.id, sessionID: nil, at: Date()) }
        XCTAssertEqual(again, 0)
        let liveLeft = try await liveSessionCount(of: account)
        let otherLive = try await liveSessionCount(of: other)
        XCTAssertEqual(liveLeft, 0)
        XCTAssertEqual(otherLive, 1)
        let audited = try await events(.sessionRevoked, of: account)
        XCTAssertEqual(audited.count, 3, "one event per revoked session")
        XCTAssertEqual(Set(audited.map(\.actorID)), ["0123456789abcdef"])
        XCTAssertEqual(Set(audited.compactMap { $0.detail["session.id"] }), Set(sessions.map(\.id.description)))
    }

    func testTheLastPasskeyStaysUnlessOverriddenAndAnotherAccountsIsNotFound() async throws {
        let account = try await storedPasswordAccount()
        // A passkey-only account: the passkey is its one way to sign in.
        _ = try await pool.query("DELETE FROM password_credentials WHERE account_id = \(account.id.rawValue)")
        let passkey = makePasskey(for: account)
        try await storage.passkeyCredentials.add(passkey)
        await assertDomainError(.lastSignInMethod) {
            try await self.admin.removePasskey(passkey.credentialID, of: account.id, overridingLastMethod: false)
        }
        let stranger = try await storedPasswordAccount(email: "bob@example.com")
        await assertDomainError(.notFound) {
            try await self.admin.removePasskey(passkey.credentialID, of: stranger.id, overridingLastMethod: true)
        }
        let kept = try await storage.passkeyCredentials.credentials(of: account.id)
        XCTAssertEqual(kept.count, 1)
        try await asOperator {
            try await admin.removePasskey(passkey.credentialID, of: account.id, overridingLastMethod: true)
        }
        let left = try await storage.passkeyCredentials.credentials(of: account.id)
        XCTAssertEqual(left, [])
        let removed = try await events(.passkeyRemoved, of: account)
        XCTAssertEqual(removed.first?.detail["override"], "last_sign_in_method")
        XCTAssertEqual(removed.first?.actor, "admin")
    }

    func testDisablingRevokesTheLiveSessionsOnceAndAnUnknownAccountIsNil() async throws {
        let account = try await storedPasswordAccount()
        try await storage.sessions.add(makeSession(for: account))
        try await storage.sessions.add(makeSession(for: account))
        let disabled = try await asOperator { try await admin.setDisabled(account.id, disabled: true, at: Date()) }
        XCTAssertEqual(disabled?.changed, true)
        XCTAssertEqual(disabled?.revoked, 2)
        let twice = try await admin.setDisabled(account.id, disabled: true, at: Date())
        XCTAssertEqual(twice?.changed, false)
        XCTAssertEqual(twice?.revoked, 0)
        let enabledAccount = try await storage.accounts.enabledAccount(id: account.id)
        XCTAssertNil(enabledAccount, "a disabled account does not sign in")
        let targets = try await admin.mailTargets(of: account.id)
        XCTAssertEqual(targets?.disabled, true)
        XCTAssertEqual(targets?.targets.map(\.address), ["ada@example.com"])
        let enabled = try await admin.setDisabled(account.id, disabled: false, at: Date())
        XCTAssertEqual(enabled?.changed, true)
        let disabledEvents = try await events(.accountDisabled, of: account)
        XCTAssertEqual(disabledEvents.count, 1, "the second disable changed nothing and is not audited")
        let unknown = try await admin.setDisabled(AccountID.random(), disabled: true, at: Date())
        XCTAssertNil(unknown)
        let noTargets = try await admin.mailTargets(of: AccountID.random())
        XCTAssertNil(noTargets)
    }

    func testErasureDeletesTheAccountItsRowsAndItsEventsLeavingATombstone() async throws {
        let account = try await storedPasswordAccount()
        let other = try await storedPasswordAccount(email: "bob@example.com")
        try await storage.sessions.add(makeSession(for: account))
        try await storage.passkeyCredentials.add(makePasskey(for: account))
        let erased = try await asOperator { try await admin.eraseAccount(account.id) }
        XCTAssertTrue(erased)
        let gone = try await storage.accounts.account(id: account.id)
        XCTAssertNil(gone)
        let emailLeft = try await storage.accountEmails.find(normalizedEmail: "ada@example.com")
        XCTAssertNil(emailLeft)
        let stored = try await admin.auditEvents(AuditEventQuery(accountID: account.id))
        XCTAssertEqual(stored.map(\.type), [AuditEvent.accountErased.rawValue], "only the tombstone is left")
        let otherStill = try await storage.accounts.account(id: other.id)
        XCTAssertNotNil(otherStill)
        let again = try await admin.eraseAccount(account.id)
        XCTAssertFalse(again)
    }

    func testTheReadsFindAnAccountByEmailAndPasskeyAndShowItWhole() async throws {
        let account = try await storedPasswordAccount()
        let passkey = makePasskey(for: account)
        try await storage.passkeyCredentials.add(passkey)
        let session = makeSession(for: account)
        try await storage.sessions.add(session)
        let byEmail = try await admin.findAccounts(.email(normalized: "ada@example.com"), limit: 50)
        let byPasskey = try await admin.findAccounts(.credentialID(passkey.credentialID), limit: 50)
        let byNothing = try await admin.findAccounts(.email(normalized: "eve@example.com"), limit: 50)
        XCTAssertEqual(byEmail.map(\.account.id), [account.id])
        XCTAssertEqual(byEmail.first?.hasPassword, true)
        XCTAssertEqual(byEmail.first?.passkeyCount, 1)
        XCTAssertEqual(byPasskey.map(\.account.id), [account.id])
        XCTAssertEqual(byNothing, [])
        let detail = try await admin.accountDetail(account.id, at: Date())
        XCTAssertEqual(detail?.emails.map(\.address), ["ada@example.com"])
        XCTAssertEqual(detail?.emails.map(\.verified), [false])
        XCTAssertEqual(detail?.passkeys.map(\.credentialID), [passkey.credentialID])
        XCTAssertEqual(detail?.sessions.map(\.id), [session.id])
        XCTAssertEqual(detail?.hasPassword, true)
        let unknown = try await admin.accountDetail(AccountID.random(), at: Date())
        XCTAssertNil(unknown)
        let listed = try await admin.listAccounts(AccountListing(hasPasskey: false))
        XCTAssertEqual(listed, [], "the one account has a passkey")
    }
}
