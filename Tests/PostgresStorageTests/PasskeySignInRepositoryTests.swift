import AdminAccess
import Domain
import Foundation
import Observability
import Postgres
import PostgresStorage
import PostgresTestSupport
import Synchronization
import XCTest

/// The sign-in's one write: the challenge consumed, a session only from a passkey row in the state the assertion was
/// checked against, and the passkey's use in the same commit when it must be durable; all or nothing.
final class PasskeySignInRepositoryTests: StorageTestCase {
    func isConsumed(_ challenge: AuthenticationChallenge) async throws -> Bool {
        try await pool.query(
            "SELECT consumed_at IS NOT NULL AS consumed FROM passkey_authentication_challenges WHERE id = \(challenge.id.rawValue)"
        ).first!.decode(Bool.self, "consumed")
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
        let challenge = try await issuedChallenge()
        await assertEqual(
            try await storage.passkeySignIns.completeSignIn(record(passkey, session: session, challenge: challenge)),
            .signedIn(displayName: account.displayName))
        await assertEqual(try await storage.sessions.find(id: session.id), session)
        await assertEqual(try await rowVersion(passkey), before, "the passkey's row must not be rewritten")
        await assertEqual(try await storedPasskeyRow(passkey), passkey)
        await assertTrue(try await isConsumed(challenge))

        // The same challenge again: used, so nothing.
        let replay = makeSession(for: account, method: .passkey)
        await assertEqual(
            try await storage.passkeySignIns.completeSignIn(record(passkey, session: replay, challenge: challenge)),
            .challengeUnavailable)
        await assertNil(try await storage.sessions.find(id: replay.id))
    }

    func testADurableUseCommitsWithTheSessionAndKeepsTheCloneWarning() async throws {
        var (account, passkey) = try await storedPasskey(signCount: 41, backedUp: true)
        passkey.cloneWarning = false
        let session = makeSession(for: account, method: .passkey)
        let usedAt = microsecondDate()
        let usage = PasskeyUsage(signCount: 42, backedUp: false, cloneWarning: true, usedAt: usedAt)
        await assertEqual(
            try await storage.passkeySignIns.completeSignIn(
                record(passkey, session: session, challenge: try await issuedChallenge(), usage: usage)),
            .signedIn(displayName: account.displayName))
        let stored = try await storedPasskeyRow(passkey)!
        XCTAssertEqual(stored.signCount, 42)
        XCTAssertFalse(stored.backedUp)
        XCTAssertTrue(stored.cloneWarning)
        XCTAssertEqual(stored.lastUsedAt, usedAt)
        await assertNotNil(try await storage.sessions.find(id: session.id))

        // A later clean use does not clear the warning.
        let clean = PasskeyUsage(signCount: 43, backedUp: false, cloneWarning: false, usedAt: microsecondDate())
        await assertEqual(
            try await storage.passkeySignIns.completeSignIn(
                record(stored, session: makeSession(for: account), challenge: try await issuedChallenge(), usage: clean)
            ),
            .signedIn(displayName: account.displayName))
        await assertEqual(try await storedPasskeyRow(passkey)?.cloneWarning, true)
    }

    func testNothingIsWrittenAndTheChallengeIsLeftWhenThePasskeyMovedOn() async throws {
        let (account, passkey) = try await storedPasskey(signCount: 41, backedUp: true)
        let usage = PasskeyUsage(signCount: 50, backedUp: true, cloneWarning: false, usedAt: microsecondDate())
        let challenge = try await issuedChallenge()
        let cases: [(String, PasskeySignInRecord)] = [
            (
                "stale sign count, durable",
                record(
                    passkey, session: makeSession(for: account), challenge: challenge, usage: usage,
                    expectedSignCount: 40)
            ),
            (
                "stale sign count, unchanged",
                record(passkey, session: makeSession(for: account), challenge: challenge, expectedSignCount: 40)
            ),
            (
                "stale backup state, durable",
                record(
                    passkey, session: makeSession(for: account), challenge: challenge, usage: usage,
                    expectedBackedUp: false)
            ),
            (
                "stale backup state, unchanged",
                record(passkey, session: makeSession(for: account), challenge: challenge, expectedBackedUp: false)
            ),
        ]
        for (name, record) in cases {
            await assertEqual(try await storage.passkeySignIns.completeSignIn(record), .passkeyChanged, name)
            await assertNil(try await storage.sessions.find(id: record.session.id), name)
        }
        await assertEqual(try await storedPasskeyRow(passkey), passkey, "the passkey is unchanged")
        await assertFalse(try await isConsumed(challenge), "the sign-in may be decided again with its challenge")
    }

    func backupEvents(of account: Account) async throws -> [StoredAuditEvent] {
        try await storage.auditEvents.events(AuditEventQuery(accountID: account.id))
            .filter { $0.type == "audit.passkey.backup_state_changed" }
    }

    /// A passkey stored with BE and BS as given.
    func storedPasskey(backupEligible: Bool, backedUp: Bool) async throws -> (Account, PasskeyCredential) {
        let account = try await storedPasswordAccount(email: "backup-\(UUID().uuidString.prefix(8))@example.com")
        var passkey = makePasskey(for: account)
        passkey.signCount = 0
        passkey.backupEligible = backupEligible
        passkey.backedUp = backedUp
        try await storage.passkeyCredentials.add(passkey)
        return (account, passkey)
    }

    func testABackupEligibilityThatChangesIsStoredWithItsAuditEventInTheSignInsStatement() async throws {
        // BE appearing (KeePassXC after registration) and going away, each with the flags before and after.
        for (before, after) in [
            ((false, false), (true, true)), ((true, true), (false, false)), ((false, false), (true, false)),
        ] {
            let (account, passkey) = try await storedPasskey(backupEligible: before.0, backedUp: before.1)
            let session = makeSession(for: account, method: .passkey)
            let usedAt = microsecondDate()
            let usage = PasskeyUsage(
                signCount: 0, backedUp: after.1, backupEligible: after.0, cloneWarning: false, usedAt: usedAt)
            let context = AuditContext(requestID: "req-be", clientAddress: "198.51.100.7")
            let outcome = try await AuditContext.$current.withValue(context) {
                try await storage.passkeySignIns.completeSignIn(
                    record(passkey, session: session, challenge: try await issuedChallenge(), usage: usage))
            }
            XCTAssertEqual(outcome, .signedIn(displayName: account.displayName))
            let stored = try await unwrapAsync(try await storedPasskeyRow(passkey))
            XCTAssertEqual(stored.backupEligible, after.0, "\(before) -> \(after)")
            XCTAssertEqual(stored.backedUp, after.1)
            XCTAssertEqual(stored.lastUsedAt, usedAt)
            await assertNotNil(try await storage.sessions.find(id: session.id))
            let events = try await backupEvents(of: account)
            XCTAssertEqual(events.count, 1, "\(before) -> \(after)")
            XCTAssertEqual(
                events.first?.detail,
                [
                    "credential.id": Base64URLText.of(passkey.credentialID),
                    "backup_eligible.old": String(before.0), "backup_eligible.new": String(after.0),
                    "backed_up.old": String(before.1), "backed_up.new": String(after.1),
                ])
            XCTAssertEqual(events.first?.requestID, "req-be")
            XCTAssertEqual(events.first?.clientAddress, "198.51.100.7")
            XCTAssertEqual(events.first?.accountID, account.id)
        }
    }

    func testAnUnchangedBackupEligibilityStoresNoBackupEvent() async throws {
        let (account, passkey) = try await storedPasskey(backupEligible: true, backedUp: false)
        // BS moving alone is a durable use, but not a change of eligibility.
        let backedUp = PasskeyUsage(signCount: 0, backedUp: true, cloneWarning: false, usedAt: microsecondDate())
        await assertEqual(
            try await storage.passkeySignIns.completeSignIn(
                record(
                    passkey, session: makeSession(for: account), challenge: try await issuedChallenge(), usage: backedUp
                )),
            .signedIn(displayName: account.displayName))
        var stored = try await unwrapAsync(try await storedPasskeyRow(passkey))
        XCTAssertTrue(stored.backedUp)
        XCTAssertTrue(stored.backupEligible)
        // A usage naming the stored BE is no change either.
        let same = PasskeyUsage(
            signCount: 0, backedUp: true, backupEligible: true, cloneWarning: false, usedAt: microsecondDate())
        await assertEqual(
            try await storage.passkeySignIns.completeSignIn(
                record(stored, session: makeSession(for: account), challenge: try await issuedChallenge(), usage: same)),
            .signedIn(displayName: account.displayName))
        stored = try await unwrapAsync(try await storedPasskeyRow(passkey))
        XCTAssertTrue(stored.backupEligible)
        await assertEqual(try await backupEvents(of: account).count, 0)
    }

    func testABackupEligibilityChangeAgainstAStaleRowWritesNothing() async throws {
        // Another sign-in stored BE 1 first: this one, checked against BE 0, must not write or audit the change again.
        let (account, passkey) = try await storedPasskey(backupEligible: true, backedUp: true)
        let usage = PasskeyUsage(
            signCount: 0, backedUp: true, backupEligible: true, cloneWarning: false, usedAt: microsecondDate())
        let challenge = try await issuedChallenge()
        for record in [
            record(
                passkey, session: makeSession(for: account), challenge: challenge, usage: usage,
                expectedBackedUp: false, expectedBackupEligible: false),
            record(passkey, session: makeSession(for: account), challenge: challenge, expectedBackupEligible: false),
        ] {
            await assertEqual(try await storage.passkeySignIns.completeSignIn(record), .passkeyChanged)
            await assertNil(try await storage.sessions.find(id: record.session.id))
        }
        await assertEqual(try await storedPasskeyRow(passkey), passkey)
        await assertFalse(try await isConsumed(challenge))
        await assertEqual(try await backupEvents(of: account).count, 0)
    }

    func testAFailedSignInLeavesTheBackupEligibilityAndNoEvent() async throws {
        let (account, passkey) = try await storedPasskey(backupEligible: false, backedUp: false)
        let usage = PasskeyUsage(
            signCount: 0, backedUp: true, backupEligible: true, cloneWarning: false, usedAt: microsecondDate())
        // A spent challenge: nothing is written.
        let spent = try await issuedChallenge()
        _ = try await storage.authenticationChallenges.consume(id: spent.id)
        await assertEqual(
            try await storage.passkeySignIns.completeSignIn(
                record(passkey, session: makeSession(for: account), challenge: spent, usage: usage)),
            .challengeUnavailable)
        // A session that cannot be inserted: the whole statement is undone, the event with it.
        let existing = makeSession(for: account)
        try await storage.sessions.add(existing)
        var clash = makeSession(for: account, method: .passkey)
        clash.id = existing.id
        do {
            _ = try await storage.passkeySignIns.completeSignIn(
                record(passkey, session: clash, challenge: try await issuedChallenge(), usage: usage))
            XCTFail("a session with a duplicate ID was stored")
        } catch {}
        await assertEqual(try await storedPasskeyRow(passkey), passkey)
        await assertEqual(try await backupEvents(of: account).count, 0)
    }

    func testNothingIsWrittenForAnExpiredOrAnotherChallenge() async throws {
        let (account, passkey) = try await storedPasskey(signCount: 41)
        let usage = PasskeyUsage(signCount: 42, backedUp: true, cloneWarning: false, usedAt: microsecondDate())
        let expired = try await issuedChallenge(lifetime: -1)
        var other = try await issuedChallenge()
        let signed = other.challenge
        other.challenge = randomBytes(32)  // the client signed another challenge than the stored one
        for (name, challenge) in [("expired", expired), ("other bytes", other)] {
            let session = makeSession(for: account)
            await assertEqual(
                try await storage.passkeySignIns.completeSignIn(
                    record(passkey, session: session, challenge: challenge, usage: usage)),
                .challengeUnavailable, name)
            await assertNil(try await storage.sessions.find(id: session.id), name)
        }
        await assertEqual(try await storedPasskeyRow(passkey), passkey)
        await assertFalse(try await isConsumed(other), "a mismatch does not consume the stored challenge")
        other.challenge = signed
        await assertEqual(
            try await storage.passkeySignIns.completeSignIn(
                record(passkey, session: makeSession(for: account), challenge: other, usage: usage)),
            .signedIn(displayName: account.displayName))
    }

    func testNoSessionForARemovedPasskeyOrAnotherAccountsPasskey() async throws {
        let (account, passkey) = try await storedPasskey()
        let (stranger, _) = try await storedPasskey()
        // The stranger's session named with this passkey: the passkey belongs to another account.
        let foreign = makeSession(for: stranger, method: .passkey)
        await assertEqual(
            try await storage.passkeySignIns.completeSignIn(
                record(passkey, session: foreign, challenge: try await issuedChallenge())),
            .passkeyChanged)
        await assertNil(try await storage.sessions.find(id: foreign.id))

        // A second passkey keeps the account signable, so the first may be removed.
        var second = makePasskey(for: account)
        second.credentialID = CredentialID(randomBytes(32))!
        try await storage.passkeyCredentials.add(second)
        try await storage.passkeyCredentials.remove(credentialID: passkey.credentialID, of: account.id)
        for usage in [nil, PasskeyUsage(signCount: 99, backedUp: true, cloneWarning: false, usedAt: Date())] {
            let session = makeSession(for: account, method: .passkey)
            let challenge = try await issuedChallenge()
            await assertEqual(
                try await storage.passkeySignIns.completeSignIn(
                    record(passkey, session: session, challenge: challenge, usage: usage)),
                .passkeyChanged)
            await assertNil(try await storage.sessions.find(id: session.id))
        }
    }

    func testAFailedSessionInsertLeavesTheChallengeAndTheUseUnrecorded() async throws {
        let (account, passkey) = try await storedPasskey(signCount: 41)
        let existing = makeSession(for: account)
        try await storage.sessions.add(existing)
        // The session insert fails (an ID that exists): the consumption and the use in the same statement must not
        // stay.
        var clash = makeSession(for: account, method: .passkey)
        clash.id = existing.id
        let usage = PasskeyUsage(signCount: 42, backedUp: true, cloneWarning: true, usedAt: microsecondDate())
        let challenge = try await issuedChallenge()
        do {
            _ = try await storage.passkeySignIns.completeSignIn(
                record(passkey, session: clash, challenge: challenge, usage: usage))
            XCTFail("a session with a duplicate ID was stored")
        } catch {}
        await assertEqual(
            try await storedPasskeyRow(passkey), passkey, "sign count, backup state and clone flag unchanged")
        await assertFalse(try await isConsumed(challenge))

        // And when the database refuses the insert for any other reason.
        try await pool.query(
            """
            CREATE FUNCTION refuse_session() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'sessions are refused'; END $$
            """)
        try await pool.query(
            "CREATE TRIGGER refuse_session BEFORE INSERT ON authentication_sessions FOR EACH ROW EXECUTE FUNCTION refuse_session()"
        )
        do {
            _ = try await storage.passkeySignIns.completeSignIn(
                record(
                    passkey, session: makeSession(for: account, method: .passkey), challenge: challenge, usage: usage))
            XCTFail("the trigger did not refuse the session")
        } catch {}
        await assertEqual(try await storedPasskeyRow(passkey), passkey)
        await assertFalse(try await isConsumed(challenge))
    }

    func testASignInThatLosesTheRaceForThePasskeySpendsItsChallengeAndWritesNothingElse() async throws {
        let (account, passkey) = try await storedPasskey(signCount: 41)
        let challenge = try await issuedChallenge()
        let session = makeSession(for: account, method: .passkey)
        let usage = PasskeyUsage(signCount: 42, backedUp: true, cloneWarning: false, usedAt: microsecondDate())
        let contender = record(passkey, session: session, challenge: challenge, usage: usage)
        let signIns = storage.passkeySignIns
        let outcome = OutcomeBox()
        // Another sign-in moves the sign count and holds the row while this one's statement runs; it commits after.
        let credentialID = PostgresBytes(passkey.credentialID.bytes)
        try await pool.transaction { connection in
            try connection.execute(
                "UPDATE passkey_credentials SET sign_count = 45 WHERE credential_id = \(credentialID)")
            Task {
                do {
                    let result = try await signIns.completeSignIn(contender)
                    outcome.value.withLock { $0 = .success(result) }
                } catch {
                    outcome.value.withLock { $0 = .failure(error) }
                }
            }
            usleep(500_000)
        }
        for _ in 0..<100 where outcome.value.withLock({ $0 == nil }) { try await Task.sleep(for: .milliseconds(20)) }
        // The statement was still waiting when the other transaction committed, or the test proves nothing.
        XCTAssertEqual(try outcome.value.withLock { try $0?.get() }, .concurrentUse)
        await assertNil(try await storage.sessions.find(id: session.id))
        await assertEqual(try await storedPasskeyRow(passkey)?.signCount, 45, "the other sign-in's count stays")
        await assertTrue(try await isConsumed(challenge))
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

/// A sign-in's outcome, set by the task that ran it.
final class OutcomeBox: Sendable {
    let value = Mutex<Result<PasskeySignInOutcome, any Error>?>(nil)
}
