import Domain
import Foundation
import PostgresStorage
import PostgresTestSupport
import XCTest

final class PasskeyCredentialRepositoryTests: StorageTestCase {
    func testPasskeyRoundTripsEveryColumn() async throws {
        let account = try await storedPasswordAccount()
        var passkey = makePasskey(for: account)
        passkey.transports = ["usb", "nfc", "ble", "smart-card", "hybrid", "internal"]
        passkey.signCount = UInt32.max
        passkey.lastUsedAt = nil
        passkey.cloneWarning = true
        passkey.algorithm = -257
        try await storage.passkeyCredentials.add(passkey)

        let found = try await storage.passkeyCredentials.find(credentialID: passkey.credentialID)
        XCTAssertEqual(found?.credential, passkey)
        XCTAssertEqual(found?.userHandle, account.userHandle)
        XCTAssertEqual(found?.displayName, account.displayName)
        await assertEqual(try await storage.passkeyCredentials.credentials(of: account.id), [passkey])
        await assertNil(try await storage.passkeyCredentials.find(credentialID: CredentialID(randomBytes(16))!))
    }

    func testDuplicateCredentialIDIsCredentialAlreadyRegistered() async throws {
        let first = try await storedPasswordAccount(email: "a@example.com")
        let second = try await storedPasswordAccount(email: "b@example.com")
        let passkey = makePasskey(for: first)
        try await storage.passkeyCredentials.add(passkey)
        var copy = makePasskey(for: second)
        copy.credentialID = passkey.credentialID
        await assertDomainError(.credentialAlreadyRegistered) { try await storage.passkeyCredentials.add(copy) }
    }

    func testRenameOnlyTheAccountsOwnPasskey() async throws {
        let owner = try await storedPasswordAccount(email: "owner@example.com")
        let stranger = try await storedPasswordAccount(email: "stranger@example.com")
        let passkey = makePasskey(for: owner)
        try await storage.passkeyCredentials.add(passkey)
        let renamed = try await storage.passkeyCredentials.rename(
            credentialID: passkey.credentialID, of: owner.id, to: "Work laptop")
        XCTAssertEqual(renamed?.name, "Work laptop")
        XCTAssertEqual(renamed?.credentialID, passkey.credentialID)
        let foreign = try await storage.passkeyCredentials.rename(
            credentialID: passkey.credentialID, of: stranger.id, to: "Mine now")
        XCTAssertNil(foreign)
        await assertEqual(try await storage.passkeyCredentials.credentials(of: owner.id).first?.name, "Work laptop")
    }

    func testTheLastWayToSignInCannotBeRemoved() async throws {
        // A passkey-only account with two passkeys: the first goes, the second is the last way in.
        let account = makeAccount()
        let registration = AccountRegistration(
            id: .random(), prospectiveAccountID: account.id, userHandle: account.userHandle, email: nil,
            displayName: nil, challenge: randomBytes(32), createdAt: microsecondDate(),
            expiresAt: microsecondDate(Date().addingTimeInterval(600)), consumedAt: nil, completedAt: nil)
        try await storage.accountRegistrations.add(registration)
        _ = try await storage.accountRegistrations.consume(id: registration.id)
        let first = makePasskey(for: account)
        try await storage.accounts.createPasskeyAccount(
            account, email: nil, credential: first, completing: registration.id)
        let second = makePasskey(for: account, name: "second")
        try await storage.passkeyCredentials.add(second)

        let stranger = try await storedPasswordAccount(email: "stranger@example.com")
        await assertDomainError(.notFound) {
            try await storage.passkeyCredentials.remove(credentialID: first.credentialID, of: stranger.id)
        }
        try await storage.passkeyCredentials.remove(credentialID: first.credentialID, of: account.id)
        await assertDomainError(.notFound) {
            try await storage.passkeyCredentials.remove(credentialID: first.credentialID, of: account.id)
        }
        await assertDomainError(.lastSignInMethod) {
            try await storage.passkeyCredentials.remove(credentialID: second.credentialID, of: account.id)
        }
        await assertEqual(try await storage.passkeyCredentials.credentials(of: account.id), [second])
    }

    func testConcurrentRemovalsNeverRemoveTheLastPasskey() async throws {
        let account = makeAccount()
        let registration = AccountRegistration(
            id: .random(), prospectiveAccountID: account.id, userHandle: account.userHandle, email: nil,
            displayName: nil, challenge: randomBytes(32), createdAt: microsecondDate(),
            expiresAt: microsecondDate(Date().addingTimeInterval(600)), consumedAt: nil, completedAt: nil)
        try await storage.accountRegistrations.add(registration)
        _ = try await storage.accountRegistrations.consume(id: registration.id)
        let first = makePasskey(for: account)
        try await storage.accounts.createPasskeyAccount(
            account, email: nil, credential: first, completing: registration.id)
        let second = makePasskey(for: account)
        try await storage.passkeyCredentials.add(second)
        let repository = storage.passkeyCredentials
        async let a: Void = repository.remove(credentialID: first.credentialID, of: account.id)
        async let b: Void = repository.remove(credentialID: second.credentialID, of: account.id)
        var successes = 0
        do {
            try await a
            successes += 1
        } catch {}
        do {
            try await b
            successes += 1
        } catch {}
        XCTAssertEqual(successes, 1)
        await assertEqual(try await storage.passkeyCredentials.credentials(of: account.id).count, 1)
    }
}

final class SessionRepositoryTests: StorageTestCase {
    func testSessionRoundTripsAndRevokes() async throws {
        let account = try await storedPasswordAccount()
        let stranger = try await storedPasswordAccount(email: "x@example.com")
        let session = makeSession(for: account, method: .passkey)
        let other = makeSession(for: account)
        try await storage.sessions.add(session)
        try await storage.sessions.add(other)
        await assertEqual(try await storage.sessions.find(id: session.id), session)
        await assertNil(try await storage.sessions.find(id: .random()))
        await assertEqual(Set(try await storage.sessions.liveSessions(of: account.id, at: Date())), [session, other])

        await assertFalse(try await storage.sessions.revoke(id: session.id, of: stranger.id, at: Date()))
        let revokedAt = microsecondDate()
        await assertTrue(try await storage.sessions.revoke(id: session.id, of: account.id, at: revokedAt))
        await assertFalse(try await storage.sessions.revoke(id: session.id, of: account.id, at: revokedAt))
        let stored = try await storage.sessions.find(id: session.id)
        XCTAssertEqual(stored?.revokedAt, revokedAt)
        XCTAssertEqual(stored?.isLive(at: Date()), false)
        await assertEqual(try await storage.sessions.liveSessions(of: account.id, at: Date()), [other])
        await assertEqual(
            try await storage.sessions.liveSessions(of: account.id, at: Date().addingTimeInterval(7200)), [])
    }

    func testADuplicateSessionIDIsRejected() async throws {
        let account = try await storedPasswordAccount()
        let session = makeSession(for: account)
        try await storage.sessions.add(session)
        var copy = makeSession(for: account)
        copy.id = session.id
        do {
            try await storage.sessions.add(copy)
            XCTFail("two sessions share an ID")
        } catch {}
        await assertEqual(try await storage.sessions.find(id: session.id), session)
    }

    func testEndedSessionsAreSwept() async throws {
        let account = try await storedPasswordAccount()
        let live = makeSession(for: account)
        let ended = makeSession(for: account)
        try await storage.sessions.add(live)
        try await storage.sessions.add(ended)
        _ = try await storage.sessions.revoke(id: ended.id, of: account.id, at: Date().addingTimeInterval(-10))
        await assertEqual(try await storage.sessions.deleteEnded(before: Date(), limit: 100), 1)
        await assertNotNil(try await storage.sessions.find(id: live.id))
        await assertNil(try await storage.sessions.find(id: ended.id))
    }
}
