import Domain
import Foundation
import Postgres
import PostgresStorage
import PostgresTestSupport
import XCTest

/// The password sign-in's one statement, password removal, and the sign-in method counts migration 0008's triggers
/// keep, against real Postgres.
final class PasswordSignInAndCountTests: StorageTestCase {
    func counts() async throws -> SignInMethodCounts { try await storage.signInMethodCounts.counts() }

    func testASignInStoresItsSessionAndReplacementHashTogetherOnlyWhileTheHashIsUnchanged() async throws {
        let account = try await storedPasswordAccount()
        let read = try await storage.passwordCredentials.credential(of: account.id)
        let original = try XCTUnwrap(read)
        let later = microsecondDate(Date().addingTimeInterval(5))

        let first = makeSession(for: account)
        let stored = try await storage.passwordCredentials.completeSignIn(
            first, verifiedHash: original.passwordHash, replacement: "$argon2id$v=19$new", at: later)
        XCTAssertTrue(stored)
        await assertEqual(try await storage.sessions.find(id: first.id), first)
        let upgraded = try await storage.passwordCredentials.credential(of: account.id)
        XCTAssertEqual(upgraded?.passwordHash, "$argon2id$v=19$new")
        XCTAssertEqual(upgraded?.updatedAt, later)
        XCTAssertEqual(upgraded?.createdAt, original.createdAt)

        // The hash verified is no longer the stored one: nothing is written.
        let second = makeSession(for: account)
        let refused = try await storage.passwordCredentials.completeSignIn(
            second, verifiedHash: original.passwordHash, replacement: "$argon2id$v=19$other", at: later)
        XCTAssertFalse(refused)
        await assertNil(try await storage.sessions.find(id: second.id))
        await assertEqual(
            try await storage.passwordCredentials.credential(of: account.id)?.passwordHash, "$argon2id$v=19$new")

        // No replacement: only the session.
        let third = makeSession(for: account)
        let plain = try await storage.passwordCredentials.completeSignIn(
            third, verifiedHash: "$argon2id$v=19$new", replacement: nil, at: later.addingTimeInterval(5))
        XCTAssertTrue(plain)
        await assertEqual(try await storage.passwordCredentials.credential(of: account.id)?.updatedAt, later)
    }

    func testThePasswordGoesOnlyAfterAPasskeySignInAndNeverLeavesNothing() async throws {
        let account = try await storedPasswordAccount()
        do {
            try await storage.passwordCredentials.removePassword(of: account.id)
            XCTFail("removed without a passkey")
        } catch let error as DomainError {
            XCTAssertEqual(error.code, .lastSignInMethod)
            XCTAssertEqual(error.reason, PasswordRemovalRefusal.noPasskey)
        }
        var unused = makePasskey(for: account)
        unused.lastUsedAt = nil
        try await storage.passkeyCredentials.add(unused)
        do {
            try await storage.passwordCredentials.removePassword(of: account.id)
            XCTFail("removed before a passkey sign-in")
        } catch let error as DomainError {
            XCTAssertEqual(error.reason, PasswordRemovalRefusal.passkeySignInRequired)
        }
        // A password session proves nothing about the passkey.
        try await storage.sessions.add(makeSession(for: account, method: .password))
        await assertDomainError(.lastSignInMethod) {
            try await storage.passwordCredentials.removePassword(of: account.id)
        }
        await assertNotNil(try await storage.passwordCredentials.credential(of: account.id))

        var passkeySession = makeSession(for: account, method: .passkey)
        passkeySession.passkeyID = unused.id
        try await storage.sessions.add(passkeySession)
        try await storage.passwordCredentials.removePassword(of: account.id)
        await assertNil(try await storage.passwordCredentials.credential(of: account.id))
        await assertDomainError(.notFound) { try await storage.passwordCredentials.removePassword(of: account.id) }
        await assertDomainError(.notFound) { try await storage.passwordCredentials.removePassword(of: .random()) }
        // The passkey is now the last way in.
        let remaining = try await storage.passkeyCredentials.credentials(of: account.id)
        let passkey = try XCTUnwrap(remaining.first)
        await assertDomainError(.lastSignInMethod) {
            try await storage.passkeyCredentials.remove(credentialID: passkey.credentialID, of: account.id)
        }
    }

    func testOnlyALiveSessionOfAPasskeyTheAccountStillHasCountsAsAPasskeySignIn() async throws {
        let account = try await storedPasswordAccount()
        var removed = makePasskey(for: account, name: "lost phone")
        removed.lastUsedAt = nil
        var kept = makePasskey(for: account, name: "new key")
        kept.lastUsedAt = nil
        try await storage.passkeyCredentials.add(removed)
        try await storage.passkeyCredentials.add(kept)
        func refused(_ message: String) async {
            do {
                try await storage.passwordCredentials.removePassword(of: account.id)
                XCTFail("removed: \(message)")
            } catch let error as DomainError {
                XCTAssertEqual(error.reason, PasswordRemovalRefusal.passkeySignInRequired, message)
            } catch { XCTFail("\(error)") }
        }
        // A session of a passkey since removed proves nothing about the one left.
        var ofRemoved = makeSession(for: account, method: .passkey)
        ofRemoved.passkeyID = removed.id
        try await storage.sessions.add(ofRemoved)
        try await storage.passkeyCredentials.remove(credentialID: removed.credentialID, of: account.id)
        await refused("a session of a removed passkey")
        // Nor does a revoked session of the passkey there is, nor an expired one, nor one that names no passkey.
        var revoked = makeSession(for: account, method: .passkey)
        revoked.passkeyID = kept.id
        try await storage.sessions.add(revoked)
        _ = try await storage.sessions.revoke(id: revoked.id, of: account.id, at: Date())
        await refused("a revoked session")
        var expired = makeSession(for: account, method: .passkey)
        expired.passkeyID = kept.id
        expired.createdAt = microsecondDate(Date().addingTimeInterval(-7200))
        expired.expiresAt = microsecondDate(Date().addingTimeInterval(-3600))
        try await storage.sessions.add(expired)
        await refused("an expired session")
        try await storage.sessions.add(makeSession(for: account, method: .passkey))
        await refused("a session that names no passkey")
        await assertNotNil(try await storage.passwordCredentials.credential(of: account.id))
        // A live session of the passkey the account has: the password may go.
        var live = makeSession(for: account, method: .passkey)
        live.passkeyID = kept.id
        try await storage.sessions.add(live)
        await assertEqual(try await storage.sessions.find(id: live.id)?.passkeyID, kept.id)
        try await storage.passwordCredentials.removePassword(of: account.id)
        await assertNil(try await storage.passwordCredentials.credential(of: account.id))
    }

    func testARecordedPasskeyUseAlsoCountsAsAPasskeySignIn() async throws {
        let account = try await storedPasswordAccount()
        var passkey = makePasskey(for: account)
        passkey.lastUsedAt = microsecondDate()
        try await storage.passkeyCredentials.add(passkey)
        try await storage.passwordCredentials.removePassword(of: account.id)
        await assertNil(try await storage.passwordCredentials.credential(of: account.id))
    }

    func testRacingRemovalsOfThePasswordAndTheLastPasskeyNeverBothWin() async throws {
        let passwords = storage.passwordCredentials
        let passkeys = storage.passkeyCredentials
        for round in 0..<10 {
            let account = try await storedPasswordAccount(email: "race\(round)@example.com")
            let passkey = makePasskey(for: account)
            try await passkeys.add(passkey)
            async let passwordGone: Bool = {
                do {
                    try await passwords.removePassword(of: account.id)
                    return true
                } catch let error as DomainError where error.code == .lastSignInMethod { return false }
            }()
            async let passkeyGone: Bool = {
                do {
                    try await passkeys.remove(credentialID: passkey.credentialID, of: account.id)
                    return true
                } catch let error as DomainError where error.code == .lastSignInMethod { return false }
            }()
            let (a, b) = try await (passwordGone, passkeyGone)
            XCTAssertTrue(a != b, "round \(round): password removed \(a), passkey removed \(b)")
            let summary = try await storage.accounts.summary(id: account.id)
            XCTAssertEqual((summary?.hasPassword ?? false) || (summary?.passkeyCount ?? 0) > 0, true)
        }
    }

    func testTheCountsFollowEveryChangeOfCredentials() async throws {
        await assertEqual(try await counts(), SignInMethodCounts())
        let ada = try await storedPasswordAccount(email: "ada@example.com")
        let grace = try await storedPasswordAccount(email: "grace@example.com")
        await assertEqual(try await counts(), SignInMethodCounts(passwordOnly: 2))

        try await storage.passkeyCredentials.add(makePasskey(for: ada, name: "one"))
        try await storage.sessions.add(makeSession(for: ada, method: .passkey))
        await assertEqual(try await counts(), SignInMethodCounts(passwordOnly: 1, both: 1))
        // A second passkey changes nothing.
        let second = makePasskey(for: ada, name: "two")
        try await storage.passkeyCredentials.add(second)
        await assertEqual(try await counts(), SignInMethodCounts(passwordOnly: 1, both: 1))
        try await storage.passkeyCredentials.remove(credentialID: second.credentialID, of: ada.id)
        await assertEqual(try await counts(), SignInMethodCounts(passwordOnly: 1, both: 1))

        try await storage.passwordCredentials.removePassword(of: ada.id)
        await assertEqual(try await counts(), SignInMethodCounts(passwordOnly: 1, passkeyOnly: 1))

        // A password upsert that replaces a hash is no change; one that adds a password is.
        var password = makePassword(for: grace)
        password.passwordHash = "$argon2id$v=19$replaced"
        try await storage.passwordCredentials.upsert(password)
        try await storage.passwordCredentials.upsert(makePassword(for: ada))
        await assertEqual(try await counts(), SignInMethodCounts(passwordOnly: 1, both: 1))

        // A passkey account, then accounts deleted with all their rows (the cascades fire the triggers too).
        let linus = makeAccount(name: "Linus")
        let registration = AccountRegistration(
            id: .random(), prospectiveAccountID: linus.id, userHandle: linus.userHandle, email: "linus@example.com",
            displayName: "Linus", challenge: randomBytes(32), createdAt: microsecondDate(),
            expiresAt: microsecondDate(Date().addingTimeInterval(300)), consumedAt: nil, completedAt: nil)
        try await storage.accountRegistrations.add(registration)
        _ = try await storage.accountRegistrations.consume(id: registration.id)
        try await storage.accounts.createPasskeyAccount(
            linus, email: nil, credential: makePasskey(for: linus), completing: registration.id)
        await assertEqual(try await counts(), SignInMethodCounts(passwordOnly: 1, both: 1, passkeyOnly: 1))
        try await storage.pool.query("DELETE FROM accounts WHERE id = \(ada.id.rawValue)")
        try await storage.pool.query("DELETE FROM accounts WHERE id = \(linus.id.rawValue)")
        await assertEqual(try await counts(), SignInMethodCounts(passwordOnly: 1))

        // The folded totals and the appended changes read the same as a full count.
        let full = try await storage.pool.query(
            """
            SELECT count(*) FILTER (WHERE p.account_id IS NOT NULL) AS with_password FROM accounts a
            LEFT JOIN password_credentials p ON p.account_id = a.id
            """
        ).first?.decode(Int.self, "with_password")
        XCTAssertEqual(full, 1)
        let pending = try await storage.pool.query("SELECT count(*) AS n FROM sign_in_method_changes")
            .first?.decode(Int.self, "n")
        XCTAssertEqual(pending, 0, "a read folds what was appended")
    }

    func testCountsSeeAccountsCreatedConcurrently() async throws {
        let accounts = storage.accounts
        let made = (0..<20).map { index in
            let account = makeAccount()
            return (account, makeEmail("user\(index)@example.com", for: account), makePassword(for: account))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (account, email, password) in made {
                group.addTask { try await accounts.createPasswordAccount(account, email: email, password: password) }
            }
            try await group.waitForAll()
        }
        await assertEqual(try await counts(), SignInMethodCounts(passwordOnly: 20))
    }
}
