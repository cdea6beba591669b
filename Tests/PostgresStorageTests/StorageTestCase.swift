import Domain
import Foundation
import Postgres
import PostgresStorage
import PostgresTestSupport
import XCTest

/// A database test case with the schema migrated and every repository on it.
class StorageTestCase: DatabaseTestCase {
    var pool: PostgresPool!
    var storage: Repositories!

    override func setUp() async throws {
        try await super.setUp()
        pool = database.makePool(size: 8)
        storage = Repositories(pool: pool)
        try await storage.migrate()
    }

    override func tearDown() async throws {
        pool?.shutdown()
        try await super.tearDown()
    }

    func randomBytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255) } }

    func makeAccount(name: String = "Ada") -> Account {
        Account(
            id: .random(), displayName: name, userHandle: UserHandle(randomBytes(32))!, createdAt: microsecondDate())
    }

    func makeEmail(_ address: String, for account: Account) -> AccountEmail {
        AccountEmail(accountID: account.id, address: EmailAddress(address)!, createdAt: microsecondDate())
    }

    func makePassword(for account: Account) -> PasswordCredential {
        PasswordCredential(
            accountID: account.id, passwordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA",
            createdAt: microsecondDate(), updatedAt: microsecondDate())
    }

    func makePasskey(for account: Account, name: String = "iPhone") -> PasskeyCredential {
        PasskeyCredential(
            id: UUID(), credentialID: CredentialID(randomBytes(64))!, accountID: account.id, publicKey: randomBytes(77),
            algorithm: -7, signCount: 41, backupEligible: true, backedUp: true, uvInitialized: true,
            transports: ["internal", "hybrid"], aaguid: UUID(), attestationFormat: "none", cloneWarning: false,
            name: name, createdAt: microsecondDate(), lastUsedAt: microsecondDate(Date().addingTimeInterval(-60)))
    }

    func makeSession(for account: Account, method: AuthenticationMethod = .password, lifetime: TimeInterval = 3600)
        -> AuthenticationSession
    {
        let now = microsecondDate()
        return AuthenticationSession(
            id: .random(), accountID: account.id, tokenDigest: randomBytes(32), authenticationMethod: method,
            createdAt: now, expiresAt: microsecondDate(now.addingTimeInterval(lifetime)), revokedAt: nil)
    }

    /// A password account with one email, already stored.
    func storedPasswordAccount(email: String = "ada@example.com") async throws -> Account {
        let account = makeAccount()
        try await storage.accounts.createPasswordAccount(
            account, email: makeEmail(email, for: account), password: makePassword(for: account))
        return account
    }

    func storedPasskey(signCount: UInt32 = 41, backedUp: Bool = true) async throws -> (Account, PasskeyCredential) {
        let account = try await storedPasswordAccount(email: "signin-\(UUID().uuidString.prefix(8))@example.com")
        var passkey = makePasskey(for: account)
        passkey.signCount = signCount
        passkey.backedUp = backedUp
        try await storage.passkeyCredentials.add(passkey)
        return (account, passkey)
    }

    /// A new unconsumed authentication challenge.
    func issuedChallenge(lifetime: TimeInterval = 300) async throws -> AuthenticationChallenge {
        // Issued 10 s ago, so a negative lifetime gives one that has expired.
        let issuedAt = Date().addingTimeInterval(-10)
        let challenge = AuthenticationChallenge(
            id: .random(), challenge: randomBytes(32), createdAt: microsecondDate(issuedAt),
            expiresAt: microsecondDate(Date().addingTimeInterval(lifetime)), consumedAt: nil)
        try await storage.authenticationChallenges.add(challenge)
        return challenge
    }

    func record(
        _ passkey: PasskeyCredential, session: AuthenticationSession, challenge: AuthenticationChallenge,
        usage: PasskeyUsage? = nil, expectedSignCount: UInt32? = nil, expectedBackedUp: Bool? = nil,
        expectedBackupEligible: Bool? = nil
    ) -> PasskeySignInRecord {
        PasskeySignInRecord(
            challengeID: challenge.id, challenge: challenge.challenge, credentialID: passkey.credentialID,
            expectedSignCount: expectedSignCount ?? passkey.signCount,
            expectedBackedUp: expectedBackedUp ?? passkey.backedUp,
            expectedBackupEligible: expectedBackupEligible ?? passkey.backupEligible, usage: usage, session: session)
    }

    func assertDomainError<T>(
        _ code: DomainError.Code, file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> T
    ) async {
        do {
            _ = try await body()
            XCTFail("expected \(code.rawValue)", file: file, line: line)
        } catch let error as DomainError {
            XCTAssertEqual(error.code, code, file: file, line: line)
        } catch {
            XCTFail("expected \(code.rawValue), got \(error)", file: file, line: line)
        }
    }
}
