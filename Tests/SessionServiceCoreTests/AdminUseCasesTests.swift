import AccountRecovery
import AdminAccess
import Crypto
import Domain
import Foundation
import InMemoryStorage
import Observability
import SessionServiceCore
import Synchronization
import UseCaseTestSupport
import XCTest

/// `AdminUseCases` without processes: which tokens are admitted to which operation and as whom, what each
/// operation changes and refuses, and the recovery code an override sends, against in-memory ports with a fixed
/// clock.
final class AdminUseCasesTests: XCTestCase {
    static let keys = SecretKeyRing(keys: [Array(repeating: 5, count: 32)])!

    let clock = TestClock()
    let log = MemoryLogSink()
    var accounts: InMemoryAccounts!
    var recovery: InMemoryRecovery!
    var admin: InMemoryAdmin!
    var useCases: AdminUseCases!
    /// A token text per scope set, stored.
    var readToken = ""
    var writeToken = ""
    var eraseToken = ""

    override func setUp() {
        accounts = InMemoryAccounts(clock: clock.read, failure: StoreDown())
        recovery = InMemoryRecovery(accounts: accounts, clock: clock.read, failure: StoreDown())
        admin = InMemoryAdmin(recovery: recovery, failure: StoreDown())
        useCases = AdminUseCases(
            admin: admin, recovery: recovery, random: RecordingRandom(), keys: Self.keys,
            logger: Logger(service: "session-service", sink: log), clock: clock.read)
        readToken = token([.read])
        writeToken = token([.write])
        eraseToken = token([.erase])
    }

    // MARK: Fixtures

    /// Stores a token with `scopes` and returns its text.
    func token(_ scopes: [AdminScope], expiresIn: TimeInterval? = nil, revoked: Bool = false) -> String {
        let secret = AdminTokenSecret(random: SecureRandom())
        admin.add(
            AdminToken(
                id: secret.id, name: "test", scopes: scopes, createdBy: "cli:test", createdAt: clock.now,
                expiresAt: expiresIn.map { clock.now.addingTimeInterval($0) }, revokedAt: revoked ? clock.now : nil),
            digest: secret.digest)
        return secret.text
    }

    func tokenID(_ text: String) -> String { AdminTokenSecret(presented: text)!.id }

    /// An account with these addresses (the verified ones marked) and `sessions` live sessions.
    func account(emails: [(String, verified: Bool)] = [("ada@example.com", true)], sessions: Int = 0) throws
        -> AccountID
    {
        let id = AccountID.random()
        try accounts.addAccount(
            Account(
                id: id, displayName: "Ada", userHandle: UserHandle(SecureRandom().bytes(count: 16))!,
                createdAt: clock.now))
        for (offset, (address, verified)) in emails.enumerated() {
            let email = AccountEmail(
                accountID: id, address: EmailAddress(address)!, createdAt: clock.now.addingTimeInterval(Double(offset)))
            accounts.state.withLock { $0.emails[email.normalizedEmail] = email }
            if verified { recovery.markVerified(emailID: email.id) }
        }
        for _ in 0..<sessions { try addSession(to: id) }
        return id
    }

    @discardableResult
    func addSession(to accountID: AccountID) throws -> SessionID {
        let session = AuthenticationSession(
            id: .random(), accountID: accountID, tokenDigest: SecureRandom().bytes(count: 32),
            authenticationMethod: .password, createdAt: clock.now, expiresAt: clock.now.addingTimeInterval(3600),
            revokedAt: nil)
        accounts.state.withLock { $0.sessions[session.id] = session }
        return session.id
    }

    /// A passkey of the account, in the passkey table.
    @discardableResult
    func addPasskey(to accountID: AccountID) -> CredentialID {
        let id = CredentialID(SecureRandom().bytes(count: 16))!
        accounts.passkeys.state.withLock {
            $0.credentials[id] = PasskeyCredential.fixture(id: id, accountID: accountID, at: clock.now)
        }
        return id
    }

    var liveSessions: Int {
        let now = clock.now
        return accounts.state.withLock { $0.sessions.values.filter { $0.isLive(at: now) }.count }
    }

    var outbox: [OutboxMessage] { recovery.state.withLock { $0.outbox } }

    func audited(_ event: AuditEvent) -> [String] { log.lines.filter { $0.contains("event=\(event.rawValue) ") } }

    // MARK: authorized

    func testATokenWithTheScopeRunsTheOperationAsItselfAndIsNoted() async throws {
        let id = try account()
        let record = try await useCases.accountDetail(token: readToken, id)
        XCTAssertEqual(record.account.id, id)
        XCTAssertEqual(record.emails.map(\.address), ["ada@example.com"])
        let tokens = admin.state.withLock { $0.tokens.values }
        XCTAssertEqual(tokens.first { $0.id == tokenID(readToken) }?.lastUsedAt, clock.now, "its use is recorded")
        let actor = admin.state.withLock { $0.actors.first { $0.0 == .accountDetail }?.1 }
        XCTAssertEqual(actor, .admin(tokenID: tokenID(readToken)), "the read runs as the token, for the audit trail")
    }

    func testMissingMalformedUnknownRevokedAndExpiredTokensAreUnauthenticated() async throws {
        let id = try account()
        let unknown = AdminTokenSecret(random: SecureRandom()).text
        for (presented, reason) in [
            ("", "missing"), ("Bearer nonsense", "unknown"), (unknown, "unknown"),
            (token([.read], revoked: true), "revoked"), (token([.read], expiresIn: 0), "expired"),
        ] {
            await assertThrowsDomainError(.unauthenticated, reason) {
                _ = try await self.useCases.accountDetail(token: presented, id)
            }
            XCTAssertTrue(
                log.lines.contains { $0.contains("admin.refused") && $0.contains("reason=\(reason)") }, reason)
        }
        XCTAssertFalse(admin.state.withLock { $0.calls.contains(.accountDetail) }, "nothing ran")
        XCTAssertFalse(admin.state.withLock { $0.calls.contains(.recordUse) }, "no refused token is noted as used")
    }

    func testATokenWithoutTheScopeIsForbiddenAndChangesNothing() async throws {
        let id = try account(sessions: 2)
        let error = await assertThrowsDomainError(.forbidden) {
            _ = try await self.useCases.revokeSessions(token: self.readToken, of: id, sessionID: nil)
        }
        XCTAssertEqual(error?.message, "this admin token does not have the write scope")
        await assertThrowsDomainError(.forbidden) { try await self.useCases.eraseAccount(token: self.writeToken, id) }
        await assertThrowsDomainError(.forbidden) {
            _ = try await self.useCases.accountDetail(token: self.eraseToken, id)
        }
        XCTAssertEqual(liveSessions, 2)
        XCTAssertNotNil(accounts.state.withLock { $0.accounts[id] })
    }

    func testAStoreThatFailsToReadTheTokenFailsTheCall() async throws {
        let id = try account()
        admin.state.withLock { $0.failing = [.token] }
        await assertThrows(StoreDown()) { _ = try await self.useCases.accountDetail(token: self.readToken, id) }
    }

    // MARK: Reads

    func testAnUnknownAccountIsNotFound() async throws {
        await assertThrowsDomainError(.notFound) {
            _ = try await self.useCases.accountDetail(token: self.readToken, AccountID.random())
        }
    }

    func testASearchAsksForAtMostTheSearchLimitAndFindsByEmail() async throws {
        let id = try account(emails: [("Ada@Example.com", true)])
        let found = try await useCases.findAccounts(token: readToken, .email(normalized: "ada@example.com"))
        XCTAssertEqual(found.map(\.account.id), [id])
        XCTAssertEqual(AdminUseCases.searchLimit, 50)
    }

    // MARK: revokeSessions

    func testRevokingEverySessionRevokesTheLiveOnesAndIsAudited() async throws {
        let id = try account(sessions: 3)
        let other = try account(emails: [("bob@example.com", true)], sessions: 1)
        let revoked = try await useCases.revokeSessions(token: writeToken, of: id, sessionID: nil)
        XCTAssertEqual(revoked, 3)
        XCTAssertEqual(liveSessions, 1, "another account's session stays")
        XCTAssertEqual(audited(.sessionRevoked).count, 1)
        XCTAssertTrue(audited(.sessionRevoked)[0].contains("count=3"))
        let othersRevoked = try await useCases.revokeSessions(token: writeToken, of: other, sessionID: nil)
        XCTAssertEqual(othersRevoked, 1)
        let revokedAgain = try await useCases.revokeSessions(token: writeToken, of: id, sessionID: nil)
        XCTAssertEqual(revokedAgain, 0, "none is left")
    }

    func testRevokingANamedSessionThatIsNotLiveIsNotFound() async throws {
        let id = try account()
        let session = try addSession(to: id)
        let revoked = try await useCases.revokeSessions(token: writeToken, of: id, sessionID: session)
        XCTAssertEqual(revoked, 1)
        await assertThrowsDomainError(.notFound, "revoked already") {
            _ = try await self.useCases.revokeSessions(token: self.writeToken, of: id, sessionID: session)
        }
        let stranger = try account(emails: [("bob@example.com", true)])
        let theirs = try addSession(to: stranger)
        await assertThrowsDomainError(.notFound, "another account's session") {
            _ = try await self.useCases.revokeSessions(token: self.writeToken, of: id, sessionID: theirs)
        }
        XCTAssertEqual(liveSessions, 1)
        XCTAssertEqual(audited(.sessionRevoked).count, 1, "a refused revocation is not audited")
    }

    // MARK: removePasskey

    func testTheLastPasskeyIsKeptWithoutTheOverride() async throws {
        let id = try account()
        let passkey = addPasskey(to: id)
        await assertThrowsDomainError(.lastSignInMethod) {
            _ = try await self.useCases.removePasskey(
                token: self.writeToken, passkey, of: id, overridingLastMethod: false)
        }
        XCTAssertEqual(accounts.passkeys.state.withLock { $0.credentials.count }, 1)
        XCTAssertEqual(outbox, [])
    }

    func testTheOverrideRemovesTheLastPasskeyAndMailsARecoveryCodeToTheFirstVerifiedAddress() async throws {
        let id = try account(emails: [("old@example.com", false), ("ada@example.com", true), ("new@example.com", true)])
        let passkey = addPasskey(to: id)
        let sentTo = try await useCases.removePasskey(token: writeToken, passkey, of: id, overridingLastMethod: true)
        XCTAssertEqual(sentTo, "ada@example.com")
        XCTAssertEqual(accounts.passkeys.state.withLock { $0.credentials.count }, 0)
        XCTAssertEqual(outbox.map(\.recipient), ["ada@example.com"])
        XCTAssertEqual(outbox.first?.template, .recoveryCode)
        let code = try XCTUnwrap(recovery.state.withLock { $0.codes.values.first })
        XCTAssertEqual(code.purpose, .recovery)
        XCTAssertEqual(code.accountID, id)
        XCTAssertTrue(audited(.passkeyRemoved)[0].contains("override=last_sign_in_method"))
        XCTAssertTrue(audited(.recoveryStarted)[0].contains("by=admin"))
    }

    func testTheOverrideSendsNothingWhenAskedNotToToADisabledAccountOrWithoutAVerifiedAddress() async throws {
        let quiet = try account()
        let quietRecipient = try await useCases.removePasskey(
            token: writeToken, addPasskey(to: quiet), of: quiet, overridingLastMethod: true, sendingRecovery: false)
        XCTAssertNil(quietRecipient)
        let disabled = try account(emails: [("bob@example.com", true)])
        _ = try await useCases.setDisabled(token: writeToken, disabled, disabled: true)
        let disabledRecipient = try await useCases.removePasskey(
            token: writeToken, addPasskey(to: disabled), of: disabled, overridingLastMethod: true)
        XCTAssertNil(disabledRecipient)
        let unverified = try account(emails: [("cy@example.com", false)])
        let unverifiedRecipient = try await useCases.removePasskey(
            token: writeToken, addPasskey(to: unverified), of: unverified, overridingLastMethod: true)
        XCTAssertNil(unverifiedRecipient)
        XCTAssertEqual(outbox, [])
        XCTAssertEqual(accounts.passkeys.state.withLock { $0.credentials.count }, 0, "each passkey is removed")
    }

    func testAnotherAccountsPasskeyIsNotFound() async throws {
        let id = try account()
        let stranger = try account(emails: [("bob@example.com", true)])
        let theirs = addPasskey(to: stranger)
        addPasskey(to: stranger)
        await assertThrowsDomainError(.notFound) {
            _ = try await self.useCases.removePasskey(
                token: self.writeToken, theirs, of: id, overridingLastMethod: true)
        }
        XCTAssertEqual(accounts.passkeys.state.withLock { $0.credentials.count }, 2)
    }

    // MARK: sendEmail

    func testARecoveryCodeGoesToTheNamedVerifiedAddressAndAVerificationCodeToAnUnverifiedOne() async throws {
        let id = try account(emails: [
            ("ada@example.com", true), ("second@example.com", true), ("new@example.com", false),
        ])
        let recoveryRecipient = try await useCases.sendEmail(
            token: writeToken, to: id, purpose: .recovery, address: " Second@EXAMPLE.com")
        XCTAssertEqual(
            recoveryRecipient,
            "second@example.com")
        let verificationRecipient = try await useCases.sendEmail(
            token: writeToken, to: id, purpose: .verification, address: nil)
        XCTAssertEqual(
            verificationRecipient,
            "new@example.com")
        XCTAssertEqual(outbox.map(\.recipient), ["second@example.com", "new@example.com"])
        XCTAssertEqual(outbox.map(\.template), [.recoveryCode, .emailVerification])
        XCTAssertEqual(audited(.emailVerificationSent).count, 1)
    }

    func testSendEmailRefusesWhatDoesNotFit() async throws {
        let id = try account(emails: [("ada@example.com", true), ("new@example.com", false)])
        await assertThrowsDomainError(.notFound, "no such account") {
            _ = try await self.useCases.sendEmail(
                token: self.writeToken, to: AccountID.random(), purpose: .recovery, address: nil)
        }
        await assertThrowsDomainError(.notFound, "not the account's") {
            _ = try await self.useCases.sendEmail(
                token: self.writeToken, to: id, purpose: .recovery, address: "eve@example.com")
        }
        await assertThrowsDomainError(.notFound, "malformed") {
            _ = try await self.useCases.sendEmail(token: self.writeToken, to: id, purpose: .recovery, address: "nope")
        }
        await assertThrowsDomainError(.invalidRequest, "recovery to an unverified address") {
            _ = try await self.useCases.sendEmail(
                token: self.writeToken, to: id, purpose: .recovery, address: "new@example.com")
        }
        await assertThrowsDomainError(.invalidRequest, "verification to a verified address") {
            _ = try await self.useCases.sendEmail(
                token: self.writeToken, to: id, purpose: .verification, address: "ada@example.com")
        }
        let allVerified = try account(emails: [("bob@example.com", true)])
        await assertThrowsDomainError(.invalidRequest, "every address is verified") {
            _ = try await self.useCases.sendEmail(
                token: self.writeToken, to: allVerified, purpose: .verification, address: nil)
        }
        _ = try await useCases.setDisabled(token: writeToken, id, disabled: true)
        await assertThrowsDomainError(.accountDisabled) {
            _ = try await self.useCases.sendEmail(token: self.writeToken, to: id, purpose: .recovery, address: nil)
        }
        let recipient = try await useCases.sendEmail(token: writeToken, to: id, purpose: .verification, address: nil)
        XCTAssertEqual(
            recipient,
            "new@example.com", "a disabled account may still verify an address")
        XCTAssertEqual(outbox.map(\.recipient), ["new@example.com"])
    }

    func testAQueueThatFailsSendsNothingAndSaysSo() async throws {
        let id = try account()
        recovery.state.withLock { $0.failing = [.issue] }
        await assertThrows(StoreDown()) {
            _ = try await self.useCases.sendEmail(token: self.writeToken, to: id, purpose: .recovery, address: nil)
        }
        XCTAssertEqual(outbox, [])
        XCTAssertEqual(audited(.recoveryStarted), [], "nothing is audited as sent")
    }

    // MARK: setDisabled and eraseAccount

    func testDisablingRevokesTheSessionsOnceAndEnablingUndoesIt() async throws {
        let id = try account(sessions: 2)
        let first = try await useCases.setDisabled(token: writeToken, id, disabled: true)
        XCTAssertEqual(first.changed, true)
        XCTAssertEqual(first.revoked, 2)
        XCTAssertEqual(liveSessions, 0)
        let again = try await useCases.setDisabled(token: writeToken, id, disabled: true)
        XCTAssertEqual(again.changed, false, "twice changes nothing the second time")
        XCTAssertEqual(audited(.accountDisabled).count, 1, "and is not audited again")
        XCTAssertTrue(audited(.accountDisabled)[0].contains("sessions_revoked=2"))
        let enabled = try await useCases.setDisabled(token: writeToken, id, disabled: false).changed
        XCTAssertEqual(enabled, true)
        let enabledAgain = try await useCases.setDisabled(token: writeToken, id, disabled: false).changed
        XCTAssertEqual(enabledAgain, false)
        XCTAssertEqual(audited(.accountEnabled).count, 1)
        await assertThrowsDomainError(.notFound) {
            _ = try await self.useCases.setDisabled(token: self.writeToken, AccountID.random(), disabled: true)
        }
    }

    func testErasingNeedsTheEraseScopeAndAnAccount() async throws {
        let id = try account(sessions: 1)
        addPasskey(to: id)
        try await useCases.eraseAccount(token: eraseToken, id)
        XCTAssertNil(accounts.state.withLock { $0.accounts[id] })
        XCTAssertEqual(accounts.state.withLock { $0.emails.count }, 0)
        XCTAssertEqual(accounts.passkeys.state.withLock { $0.credentials.count }, 0)
        XCTAssertEqual(audited(.accountErased).count, 1)
        await assertThrowsDomainError(.notFound, "erased already") {
            try await self.useCases.eraseAccount(token: self.eraseToken, id)
        }
        XCTAssertEqual(audited(.accountErased).count, 1)
    }

    // MARK: auditEvents

    func testAuditEventsAreReadWithTheReadScope() async throws {
        let id = try account()
        admin.state.withLock {
            $0.events = (1...3).map {
                StoredAuditEvent(
                    id: Int64($0), occurredAt: clock.now, type: "audit.session.revoked", accountID: id, actor: "user",
                    actorID: nil, requestID: nil, clientAddress: nil, detail: [:])
            }
        }
        let page = try await useCases.auditEvents(
            token: readToken, AuditEventQuery(accountID: id, before: 3, limit: 10))
        XCTAssertEqual(page.map(\.id), [2, 1], "older than the cursor, newest first")
        await assertThrowsDomainError(.forbidden) {
            _ = try await self.useCases.auditEvents(token: self.writeToken, AuditEventQuery())
        }
    }
}

extension PasskeyCredential {
    /// A stored passkey with placeholder key material: enough for the tables, never verified.
    static func fixture(id: CredentialID, accountID: AccountID, at now: Date) -> PasskeyCredential {
        PasskeyCredential(
            id: UUID(), credentialID: id, accountID: accountID, publicKey: [1, 2, 3], algorithm: -7, signCount: 0,
            backupEligible: true, backedUp: true, uvInitialized: true, transports: [], aaguid: UUID(),
            attestationFormat: "none", cloneWarning: false, name: "Passkey", createdAt: now, lastUsedAt: nil)
    }
}
