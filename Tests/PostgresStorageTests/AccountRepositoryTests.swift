import Domain
import Foundation
import Postgres
import PostgresStorage
import PostgresTestSupport
import XCTest

final class AccountRepositoryTests: StorageTestCase {
    func testPasswordAccountRoundTripsEveryColumn() async throws {
        let account = makeAccount(name: "Ada Lovelace")
        let email = makeEmail("  Ada@Example.COM ", for: account)
        let password = makePassword(for: account)
        try await storage.accounts.createPasswordAccount(account, email: email, password: password)

        await assertEqual(try await storage.accounts.account(id: account.id), account)
        await assertEqual(try await storage.accountEmails.emails(of: account.id), [email])
        await assertEqual(try await storage.accountEmails.find(normalizedEmail: "ada@example.com"), email)
        XCTAssertEqual(email.email, "Ada@Example.COM")
        await assertEqual(try await storage.passwordCredentials.credential(of: account.id), password)
        await assertEqual(
            try await storage.passwordCredentials.signInRecord(normalizedEmail: "ada@example.com"),
            PasswordSignInRecord(
                accountID: account.id, displayName: "Ada Lovelace", passwordHash: password.passwordHash))
        await assertNil(try await storage.passwordCredentials.signInRecord(normalizedEmail: "nobody@example.com"))
        await assertNil(try await storage.accounts.account(id: .random()))

        let summary = try await storage.accounts.summary(id: account.id)
        XCTAssertEqual(
            summary, AccountSummary(account: account, emails: ["Ada@Example.COM"], hasPassword: true, passkeyCount: 0))
    }

    func testRenameSetsTheDisplayNameOfThatAccountOnly() async throws {
        let account = makeAccount(name: "Ada Lovelace")
        try await storage.accounts.createPasswordAccount(
            account, email: makeEmail("ada@example.com", for: account), password: makePassword(for: account))
        let other = makeAccount(name: "Grace Hopper")
        try await storage.accounts.createPasswordAccount(
            other, email: makeEmail("grace@example.com", for: other), password: makePassword(for: other))
        var renamed = account
        renamed.displayName = "Ada, Countess of Lovelace"
        await assertEqual(try await storage.accounts.rename(id: account.id, to: renamed.displayName), renamed)
        await assertEqual(try await storage.accounts.account(id: account.id), renamed)
        await assertEqual(try await storage.accounts.account(id: other.id), other)
        await assertEqual(
            try await storage.passwordCredentials.signInRecord(normalizedEmail: "ada@example.com")?.displayName,
            "Ada, Countess of Lovelace")
        await assertNil(try await storage.accounts.rename(id: .random(), to: "Nobody"))
    }

    func testDuplicateNormalizedEmailIsEmailTakenAndWritesNothing() async throws {
        _ = try await storedPasswordAccount(email: "ada@example.com")
        let other = makeAccount(name: "Impostor")
        await assertDomainError(.emailTaken) {
            try await storage.accounts.createPasswordAccount(
                other, email: makeEmail("ADA@example.com ", for: other), password: makePassword(for: other))
        }
        await assertNil(try await storage.accounts.account(id: other.id), "half-written account")
        await assertNil(try await storage.passwordCredentials.credential(of: other.id))
        await assertDomainError(.emailTaken) {
            try await storage.accountEmails.add(makeEmail("Ada@Example.com", for: other))
        }
    }

    func testPasswordUpsertReplacesTheHash() async throws {
        let account = try await storedPasswordAccount()
        var password = makePassword(for: account)
        password.passwordHash = "$argon2id$v=19$m=19456,t=2,p=1$bmV3$bmV3aGFzaA"
        password.updatedAt = microsecondDate(Date().addingTimeInterval(10))
        try await storage.passwordCredentials.upsert(password)
        let stored = try await storage.passwordCredentials.credential(of: account.id)
        XCTAssertEqual(stored?.passwordHash, password.passwordHash)
        XCTAssertEqual(stored?.updatedAt, password.updatedAt)
    }

    func testPasskeyAccountIsCreatedInOneTransactionWithItsRegistration() async throws {
        let account = makeAccount(name: "Grace")
        let registration = AccountRegistration(
            id: .random(), prospectiveAccountID: account.id, userHandle: account.userHandle, email: "grace@example.com",
            displayName: "Grace", challenge: randomBytes(32), createdAt: microsecondDate(),
            expiresAt: microsecondDate(Date().addingTimeInterval(600)), consumedAt: nil, completedAt: nil)
        try await storage.accountRegistrations.add(registration)
        guard case .consumed = try await storage.accountRegistrations.consume(id: registration.id) else {
            return XCTFail("registration unavailable")
        }
        let passkey = makePasskey(for: account)
        try await storage.accounts.createPasskeyAccount(
            account, email: makeEmail("grace@example.com", for: account), credential: passkey,
            completing: registration.id)

        await assertEqual(try await storage.accounts.account(id: account.id), account)
        await assertEqual(try await storage.passkeyCredentials.credentials(of: account.id), [passkey])
        let summary = try await storage.accounts.summary(id: account.id)
        XCTAssertEqual(summary?.hasPassword, false)
        XCTAssertEqual(summary?.passkeyCount, 1)
        XCTAssertEqual(summary?.emails, ["grace@example.com"])

        // Completing it a second time is refused.
        let again = makeAccount()
        await assertDomainError(.challengeUnavailable) {
            try await storage.accounts.createPasskeyAccount(
                again, email: nil, credential: makePasskey(for: again), completing: registration.id)
        }
    }

    func testPasskeyAccountWithTakenEmailOrCredentialLeavesNothingBehind() async throws {
        let existing = try await storedPasswordAccount(email: "taken@example.com")
        let existingPasskey = makePasskey(for: existing)
        try await storage.passkeyCredentials.add(existingPasskey)

        for (email, credentialID, expected) in [
            ("taken@example.com", nil, DomainError.Code.emailTaken),
            ("fresh@example.com", existingPasskey.credentialID, .credentialAlreadyRegistered),
        ] {
            let account = makeAccount()
            let registration = AccountRegistration(
                id: .random(), prospectiveAccountID: account.id, userHandle: account.userHandle, email: nil,
                displayName: nil, challenge: randomBytes(32), createdAt: microsecondDate(),
                expiresAt: microsecondDate(Date().addingTimeInterval(600)), consumedAt: nil, completedAt: nil)
            try await storage.accountRegistrations.add(registration)
            _ = try await storage.accountRegistrations.consume(id: registration.id)
            var passkey = makePasskey(for: account)
            if let credentialID { passkey.credentialID = credentialID }
            await assertDomainError(expected) {
                try await storage.accounts.createPasskeyAccount(
                    account, email: makeEmail(email, for: account), credential: passkey, completing: registration.id)
            }
            await assertNil(try await storage.accounts.account(id: account.id), "half-written account")
            let completed = try await pool.query(
                "SELECT completed_at IS NULL AS open FROM passkey_account_registrations WHERE id = \(registration.id.rawValue)"
            ).first!.decode(Bool.self, "open")
            XCTAssertTrue(completed, "the registration was marked completed by a rolled-back transaction")
        }
    }
}
