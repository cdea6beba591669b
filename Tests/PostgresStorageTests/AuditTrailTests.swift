import AdminAccess
import Domain
import Foundation
import Observability
import Postgres
import PostgresStorage
import PostgresTestSupport
import XCTest

/// The stored audit trail: every change writes its event in its own transaction, with who asked and from where,
/// and a change that did not commit leaves no event.
final class AuditTrailTests: StorageTestCase {
    func events(of account: Account) async throws -> [StoredAuditEvent] {
        try await storage.auditEvents.events(AuditEventQuery(accountID: account.id))
    }

    func types(of account: Account) async throws -> [String] {
        try await events(of: account).reversed().map(\.type)
    }

    func testEachChangeStoresOneEventWithTheCallersRequestAndAddress() async throws {
        let context = AuditContext(requestID: "req-1", clientAddress: "203.0.113.9")
        let account = try await AuditContext.$current.withValue(context) { try await storedPasswordAccount() }
        let stored = try await events(of: account)
        XCTAssertEqual(stored.count, 1)
        let created = try XCTUnwrap(stored.first)
        XCTAssertEqual(created.type, "audit.account.created")
        XCTAssertEqual(created.accountID, account.id)
        XCTAssertEqual(created.actor, "user")
        XCTAssertNil(created.actorID)
        XCTAssertEqual(created.requestID, "req-1")
        XCTAssertEqual(created.clientAddress, "203.0.113.9")
        XCTAssertEqual(created.detail, ["method": "password"])
        XCTAssertLessThan(abs(created.occurredAt.timeIntervalSinceNow), 60)

        // A rename, a passkey added and removed, a password sign-in, a session revoked, the password removed.
        _ = try await storage.accounts.rename(id: account.id, to: "Ada L.")
        let passkey = makePasskey(for: account)
        try await storage.passkeyCredentials.add(passkey)
        let second = makePasskey(for: account, name: "Pixel")
        try await storage.passkeyCredentials.add(second)
        try await storage.passkeyCredentials.remove(credentialID: second.credentialID, of: account.id)
        let session = makeSession(for: account)
        let hash = makePassword(for: account).passwordHash
        let signedIn = try await storage.passwordCredentials.completeSignIn(
            session, verifiedHash: hash, replacement: nil, at: Date())
        XCTAssertTrue(signedIn)
        let revoked = try await storage.sessions.revoke(id: session.id, of: account.id, at: Date())
        XCTAssertTrue(revoked)
        try await storage.passwordCredentials.removePassword(of: account.id)
        let expected = [
            "audit.account.created", "audit.account.renamed", "audit.passkey.registered", "audit.passkey.registered",
            "audit.passkey.removed", "audit.sign_in.succeeded", "audit.session.revoked", "audit.password.removed",
        ]
        await assertEqual(try await types(of: account), expected)
        let all = try await events(of: account)
        XCTAssertEqual(all.map(\.id), all.map(\.id).sorted(by: >), "newest first, by a time-ordered ID")
        let signIn = try XCTUnwrap(all.first { $0.type == "audit.sign_in.succeeded" })
        XCTAssertEqual(signIn.detail, ["method": "password", "session.id": session.id.description])
        XCTAssertNil(signIn.requestID, "outside a call there is no request to name")
        let removed = try XCTUnwrap(all.first { $0.type == "audit.passkey.removed" })
        XCTAssertEqual(removed.detail["credential.id"], Base64URLText.of(second.credentialID))
    }

    func testARefusedOrLostChangeStoresNoEvent() async throws {
        let account = try await storedPasswordAccount()
        // The password cannot go before a passkey has signed in: refused, and nothing is recorded.
        var unused = makePasskey(for: account)
        unused.lastUsedAt = nil
        try await storage.passkeyCredentials.add(unused)
        await assertDomainError(.lastSignInMethod) {
            try await self.storage.passwordCredentials.removePassword(of: account.id)
        }
        // A session that is not there, a password sign-in with a stale hash, a passkey that is not there.
        let missing = makeSession(for: account)
        let revoked = try await storage.sessions.revoke(id: missing.id, of: account.id, at: Date())
        XCTAssertFalse(revoked)
        let stale = try await storage.passwordCredentials.completeSignIn(
            makeSession(for: account), verifiedHash: "$argon2id$stale", replacement: nil, at: Date())
        XCTAssertFalse(stale)
        await assertDomainError(.notFound) {
            try await self.storage.passkeyCredentials.remove(
                credentialID: CredentialID(self.randomBytes(16))!, of: account.id)
        }
        await assertEqual(try await types(of: account), ["audit.account.created", "audit.passkey.registered"])
    }

    func testAPasskeySignInStoresItsEventOnlyWhenItCommits() async throws {
        let (account, passkey) = try await storedPasskey()
        let challenge = try await issuedChallenge()
        let session = makeSession(for: account, method: .passkey)
        let outcome = try await AuditContext.$current.withValue(AuditContext(requestID: "r", clientAddress: "::1")) {
            try await storage.passkeySignIns.completeSignIn(record(passkey, session: session, challenge: challenge))
        }
        XCTAssertEqual(outcome, .signedIn(displayName: account.displayName))
        // The same challenge again: spent, no session, no event.
        let replay = try await storage.passkeySignIns.completeSignIn(
            record(passkey, session: makeSession(for: account, method: .passkey), challenge: challenge))
        XCTAssertEqual(replay, .challengeUnavailable)
        let signIns = try await events(of: account).filter { $0.type == "audit.sign_in.succeeded" }
        XCTAssertEqual(signIns.count, 1)
        XCTAssertEqual(signIns.first?.detail, ["method": "passkey", "session.id": session.id.description])
        XCTAssertEqual(signIns.first?.clientAddress, "::1")

        // A use that raises the clone warning stores that too, in the same statement.
        let warning = PasskeyUsage(signCount: 5, backedUp: true, cloneWarning: true, usedAt: microsecondDate())
        let warned = try await storage.passkeySignIns.completeSignIn(
            record(
                passkey, session: makeSession(for: account, method: .passkey), challenge: try await issuedChallenge(),
                usage: warning))
        XCTAssertEqual(warned, .signedIn(displayName: account.displayName))
        let latest = try await types(of: account).suffix(2)
        XCTAssertEqual(Set(latest), ["audit.passkey.clone_warning", "audit.sign_in.succeeded"])
    }

    func testAnAdminActorAndOddInputAreStoredBounded() async throws {
        let context = AuditContext(
            requestID: String(repeating: "r", count: 300) + "\u{0}", clientAddress: "203.0.113.1",
            actor: .admin(tokenID: "tok_123"))
        let account = try await AuditContext.$current.withValue(context) { try await storedPasswordAccount() }
        let event = try await unwrapAsync(try await events(of: account).first)
        XCTAssertEqual(event.actor, "admin")
        XCTAssertEqual(event.actorID, "tok_123")
        XCTAssertEqual(event.requestID, String(repeating: "r", count: 128))
    }

    func testQueriesFilterByTypeAndTimeAndPageByID() async throws {
        let account = try await storedPasswordAccount()
        for index in 0..<5 { _ = try await storage.accounts.rename(id: account.id, to: "Ada \(index)") }
        let renames = try await storage.auditEvents.events(
            AuditEventQuery(accountID: account.id, types: ["audit.account.renamed"], limit: 3))
        XCTAssertEqual(renames.count, 3)
        let rest = try await storage.auditEvents.events(
            AuditEventQuery(accountID: account.id, types: ["audit.account.renamed"], before: renames.last?.id, limit: 3)
        )
        XCTAssertEqual(rest.count, 2)
        XCTAssertTrue(Set(renames.map(\.id)).isDisjoint(with: rest.map(\.id)))
        let future = try await storage.auditEvents.events(
            AuditEventQuery(accountID: account.id, since: Date().addingTimeInterval(3600)))
        XCTAssertEqual(future, [])
        let everything = try await storage.auditEvents.events(
            AuditEventQuery(accountID: account.id, until: Date().addingTimeInterval(3600)))
        XCTAssertEqual(everything.count, 6)
    }

    func testTheSweepDeletesOnlyEventsPastTheRetention() async throws {
        let account = try await storedPasswordAccount()
        _ = try await storage.accounts.rename(id: account.id, to: "Ada B.")
        try await pool.query(
            "UPDATE audit_events SET occurred_at = now() - interval '400 days' WHERE account_id = \(account.id.rawValue) AND type = 'audit.account.created'"
        )
        let deleted = try await storage.auditEvents.deleteEnded(
            before: Date().addingTimeInterval(-365 * 86_400), limit: 100)
        XCTAssertGreaterThanOrEqual(deleted, 1)
        await assertEqual(try await types(of: account), ["audit.account.renamed"])
    }
}

/// A credential ID as the audit trail's detail names it.
enum Base64URLText {
    static func of(_ credentialID: CredentialID) -> String {
        let text = Data(credentialID.bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return String(text.prefix(200))
    }
}

func unwrapAsync<T>(_ value: @autoclosure () async throws -> T?, file: StaticString = #filePath, line: UInt = #line)
    async throws -> T
{
    let resolved = try await value()
    return try XCTUnwrap(resolved, file: file, line: line)
}
