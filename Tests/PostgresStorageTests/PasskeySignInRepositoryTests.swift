import Domain
import Foundation
import Postgres
import PostgresStorage
import PostgresTestSupport
import XCTest

/// The sign-in's one write: a session only from a passkey row in the state the assertion was checked against, and the
/// passkey's use in the same commit when it must be durable.
final class PasskeySignInRepositoryTests: StorageTestCase {
    func storedPasskey(signCount: UInt32 = 41, backedUp: Bool = true) async throws -> (Account, PasskeyCredential) {
        let account = try await storedPasswordAccount(email: "signin-\(UUID().uuidString.prefix(8))@example.com")
        var passkey = makePasskey(for: account)
        passkey.signCount = signCount
        passkey.backedUp = backedUp
        try await storage.passkeyCredentials.add(passkey)
        return (account, passkey)
    }

    func record(
        _ passkey: PasskeyCredential, session: AuthenticationSession, usage: PasskeyUsage? = nil,
        expectedSignCount: UInt32? = nil, expectedBackedUp: Bool? = nil
    ) -> PasskeySignInRecord {
        PasskeySignInRecord(
            credentialID: passkey.credentialID, expectedSignCount: expectedSignCount ?? passkey.signCount,
            expectedBackedUp: expectedBackedUp ?? passkey.backedUp, usage: usage, session: session)
    }

    /// The row version of the passkey: it changes whenever the row is written, even to the same values.
    func rowVersion(_ passkey: PasskeyCredential) async throws -> String {
        try await pool.query(
            "SELECT xmin::text AS version FROM passkey_credentials WHERE credential_id = \(PostgresBytes(passkey.credentialID.bytes))"
        ).first!.decode(String.self, "version")
    }

    func storedPasskeyRow(_ passkey: PasskeyCredential) async throws -> PasskeyCredential? {
        try await storage.passkeyCredentials.find(credentialID: passkey.credentialID)?.credential
    }

    func testAnUnchangedUseIssuesTheSessionWithoutWritingThePasskeyRow() async throws {
        let (account, passkey) = try await storedPasskey(signCount: 0)
        let before = try await rowVersion(passkey)
        let session = makeSession(for: account, method: .passkey)
        await assertEqual(try await storage.passkeySignIns.completeSignIn(record(passkey, session: session)), account.displayName)
        await assertEqual(try await storage.sessions.find(tokenDigest: session.tokenDigest), session)
        await assertEqual(try await rowVersion(passkey), before, "the passkey's row must not be rewritten")
        await assertEqual(try await storedPasskeyRow(passkey), passkey)
    }

    func testADurableUseCommitsWithTheSessionAndKeepsTheCloneWarning() async throws {
        var (account, passkey) = try await storedPasskey(signCount: 41, backedUp: true)
        passkey.cloneWarning = false
        let session = makeSession(for: account, method: .passkey)
        let usedAt = microsecondDate()
        let usage = PasskeyUsage(signCount: 42, backedUp: false, cloneWarning: true, usedAt: usedAt)
        await assertEqual(
            try await storage.passkeySignIns.completeSignIn(record(passkey, session: session, usage: usage)),
            account.displayName)
        let stored = try await storedPasskeyRow(passkey)!
        XCTAssertEqual(stored.signCount, 42)
        XCTAssertFalse(stored.backedUp)
        XCTAssertTrue(stored.cloneWarning)
        XCTAssertEqual(stored.lastUsedAt, usedAt)
        await assertNotNil(try await storage.sessions.find(tokenDigest: session.tokenDigest))

        // A later clean use does not clear the warning.
        let later = makeSession(for: account, method: .passkey)
        let clean = PasskeyUsage(signCount: 43, backedUp: false, cloneWarning: false, usedAt: microsecondDate())
        await assertNotNil(
            try await storage.passkeySignIns.completeSignIn(
                record(stored, session: later, usage: clean)))
        await assertEqual(try await storedPasskeyRow(passkey)?.cloneWarning, true)
    }

    func testNothingIsWrittenWhenThePasskeyMovedOnSinceItWasRead() async throws {
        let (account, passkey) = try await storedPasskey(signCount: 41, backedUp: true)
        let usage = PasskeyUsage(signCount: 50, backedUp: true, cloneWarning: false, usedAt: microsecondDate())
        let cases: [(String, PasskeySignInRecord)] = [
            ("stale sign count, durable", record(passkey, session: makeSession(for: account), usage: usage, expectedSignCount: 40)),
            ("stale sign count, unchanged", record(passkey, session: makeSession(for: account), expectedSignCount: 40)),
            ("stale backup state, durable", record(passkey, session: makeSession(for: account), usage: usage, expectedBackedUp: false)),
            ("stale backup state, unchanged", record(passkey, session: makeSession(for: account), expectedBackedUp: false)),
        ]
        for (name, record) in cases {
            await assertNil(try await storage.passkeySignIns.completeSignIn(record), name)
            await assertNil(try await storage.sessions.find(tokenDigest: record.session.tokenDigest), name)
        }
        await assertEqual(try await storedPasskeyRow(passkey), passkey, "the passkey is unchanged")
    }

    func testNoSessionForARemovedPasskeyOrAnotherAccountsPasskey() async throws {
        let (account, passkey) = try await storedPasskey()
        let (stranger, _) = try await storedPasskey()
        // The stranger's session named with this passkey: the passkey belongs to another account.
        let foreign = makeSession(for: stranger, method: .passkey)
        await assertNil(try await storage.passkeySignIns.completeSignIn(record(passkey, session: foreign)))
        await assertNil(try await storage.sessions.find(tokenDigest: foreign.tokenDigest))

        // A second passkey keeps the account signable, so the first may be removed.
        var second = makePasskey(for: account)
        second.credentialID = CredentialID(randomBytes(32))!
        try await storage.passkeyCredentials.add(second)
        try await storage.passkeyCredentials.remove(credentialID: passkey.credentialID, of: account.id)
        for usage in [nil, PasskeyUsage(signCount: 99, backedUp: true, cloneWarning: false, usedAt: Date())] {
            let session = makeSession(for: account, method: .passkey)
            await assertNil(try await storage.passkeySignIns.completeSignIn(record(passkey, session: session, usage: usage)))
            await assertNil(try await storage.sessions.find(tokenDigest: session.tokenDigest))
        }
    }

    func testAFailedSessionInsertLeavesTheUseUnrecorded() async throws {
        let (account, passkey) = try await storedPasskey(signCount: 41)
        let existing = makeSession(for: account)
        try await storage.sessions.add(existing)
        // The session insert fails (a token digest that exists): the use in the same statement must not stay.
        var clash = makeSession(for: account, method: .passkey)
        clash.tokenDigest = existing.tokenDigest
        let usage = PasskeyUsage(signCount: 42, backedUp: true, cloneWarning: true, usedAt: microsecondDate())
        do {
            _ = try await storage.passkeySignIns.completeSignIn(record(passkey, session: clash, usage: usage))
            XCTFail("a session with a duplicate token digest was stored")
        } catch {}
        await assertEqual(try await storedPasskeyRow(passkey), passkey, "sign count, backup state and clone flag unchanged")

        // And when the database refuses the insert for any other reason.
        try await pool.query(
            """
            CREATE FUNCTION refuse_session() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'sessions are refused'; END $$
            """)
        try await pool.query(
            "CREATE TRIGGER refuse_session BEFORE INSERT ON authentication_sessions FOR EACH ROW EXECUTE FUNCTION refuse_session()")
        do {
            _ = try await storage.passkeySignIns.completeSignIn(
                record(passkey, session: makeSession(for: account, method: .passkey), usage: usage))
            XCTFail("the trigger did not refuse the session")
        } catch {}
        await assertEqual(try await storedPasskeyRow(passkey), passkey)
    }

    func testLastUseMovesOnlyForwardAndSkipsUnknownPasskeys() async throws {
        let (_, first) = try await storedPasskey()
        let (_, second) = try await storedPasskey()
        let earlier = microsecondDate(first.lastUsedAt!.addingTimeInterval(-30))
        let later = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded(.down) / 1000)
        let written = try await storage.passkeySignIns.recordLastUse([
            first.credentialID: later, second.credentialID: earlier, CredentialID(randomBytes(16))!: later,
        ])
        XCTAssertEqual(written, 1, "only the passkey whose stored time is older moves")
        await assertEqual(try await storedPasskeyRow(first)?.lastUsedAt, later)
        await assertEqual(try await storedPasskeyRow(second)?.lastUsedAt, second.lastUsedAt)
        await assertEqual(try await storage.passkeySignIns.recordLastUse([:]), 0)
    }
}
