import Crypto
import Domain
import Encoding
import Foundation
import InMemoryStorage
import Observability
import SessionIssuance
import SoftwareAuthenticator
import Synchronization
import VerificationServiceCore
import WebAuthn
import XCTest

/// `PasskeyCeremonies.finishAuthentication` when an assertion's BE flag differs from the stored one, under
/// `PASSKEY_BACKUP_ELIGIBILITY_CHANGE=update` (the default) and `reject`, against in-memory ports.
final class BackupEligibilityChangeTests: XCTestCase {
    static let rpID = "example.com"
    static let origin = "https://example.com"
    static let backupStateChanged = "audit.passkey.backup_state_changed"

    var passkeys = InMemoryPasskeys()
    var challenges: TableChallenges!
    var cache = CredentialCache()
    let log = MemoryLogSink()
    let accountID = AccountID.random()

    override func setUp() { reset() }

    func reset() {
        passkeys = InMemoryPasskeys()
        challenges = TableChallenges(store: passkeys)
        cache = CredentialCache()
    }

    func ceremonies(_ change: BackupEligibilityChangePolicy) -> PasskeyCeremonies {
        PasskeyCeremonies(
            challenges: challenges, accounts: UnusedAccounts(), passkeys: passkeys, signIns: passkeys,
            sessions: SessionIssuer(random: SecureRandom(), lifetime: 3600),
            lastUse: LastUseRecorder(repository: passkeys),
            authenticationVerifier: AuthenticationVerifier(
                policy: AuthenticationPolicy(backupEligibilityChange: change)),
            relyingPartyID: Self.rpID, origins: OriginPolicy(allowedOrigins: [Self.origin]), credentials: cache,
            logger: Logger(service: "verification-service", sink: log), metrics: MetricsRegistry())
    }

    /// A passkey of `accountID` registered with these flags (BE 0 unless given), its counter kept at zero as synced
    /// passkeys do.
    func registered(
        flags: AuthenticatorData.Flags = [.userPresent, .userVerified, .attestedCredentialData]
    ) async throws -> SoftwareAuthenticator {
        let handle = UserHandle(SecureRandom().bytes(count: 16))!
        passkeys.addAccount(accountID, handle: handle, displayName: "Ada")
        let authenticator = SoftwareAuthenticator(userHandle: handle.bytes, keepsZeroCounter: true)
        let (id, challenge) = challenges.issueRegistration()
        _ = try await ceremonies(.update).finishRegistration(
            accountID: accountID, challengeID: id,
            response: authenticator.makeRegistration(
                challenge: challenge, rpID: Self.rpID, origin: Self.origin, flags: flags))
        return authenticator
    }

    func signIn(
        _ authenticator: inout SoftwareAuthenticator, flags: AuthenticatorData.Flags,
        change: BackupEligibilityChangePolicy = .update
    ) async throws -> PasskeyCeremonies.SignIn {
        let (id, challenge) = try await challenges.issueAuthentication()
        let assertion = authenticator.makeAssertion(
            challenge: challenge, rpID: Self.rpID, origin: Self.origin, flags: flags)
        return try await ceremonies(change).finishAuthentication(challengeID: id, response: assertion)
    }

    func stored(_ authenticator: SoftwareAuthenticator) -> PasskeyCredential? {
        passkeys.state.withLock { $0.credentials[CredentialID(authenticator.credentialID)!] }
    }

    var storedEvents: [InMemoryPasskeys.StoredAuditEvent] { passkeys.state.withLock { $0.auditEvents } }
    var sessions: [AuthenticationSession] { passkeys.state.withLock { $0.sessions } }
    var unconsumedChallenges: Int {
        passkeys.state.withLock { $0.challenges.values.filter { $0.consumedAt == nil }.count }
    }

    func assertRefused(
        reason: String, file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            XCTFail("the sign-in was accepted", file: file, line: line)
        } catch let error as DomainError {
            XCTAssertEqual(error.code, .invalidCredentials, "\(error)", file: file, line: line)
            XCTAssertEqual(error.reason, reason, file: file, line: line)
        } catch {
            XCTFail("\(error)", file: file, line: line)
        }
    }

    func testABackupEligibilityThatAppearsAfterRegistrationIsStoredAndAuditedInTheSignInsWrite() async throws {
        // KeePassXC 2.7.12: a passkey made with BE 0 comes back with BE and BS set.
        var authenticator = try await registered()
        XCTAssertEqual(stored(authenticator)?.backupEligible, false)
        let signIn = try await signIn(&authenticator, flags: [.userPresent, .userVerified, .backupEligible, .backedUp])
        XCTAssertEqual(signIn.accountID, accountID)
        XCTAssertEqual(sessions, [signIn.session.session])
        let passkey = try XCTUnwrap(stored(authenticator))
        XCTAssertTrue(passkey.backupEligible, "the new BE is stored")
        XCTAssertTrue(passkey.backedUp, "and the new BS with it")
        XCTAssertEqual(passkey.lastUsedAt, signIn.session.session.createdAt, "written with the session, not later")
        let credentialID = Base64URL.encode(authenticator.credentialID)
        XCTAssertEqual(
            storedEvents.filter { $0.type == Self.backupStateChanged },
            [
                InMemoryPasskeys.StoredAuditEvent(
                    type: Self.backupStateChanged, accountID: accountID,
                    detail: [
                        "credential.id": credentialID, "backup_eligible.old": "false", "backup_eligible.new": "true",
                        "backed_up.old": "false", "backed_up.new": "true",
                    ])
            ])
        XCTAssertEqual(storedEvents.map(\.type), [Self.backupStateChanged, "audit.sign_in.succeeded"])
        let line = try XCTUnwrap(log.lines.first { $0.contains("event=\(Self.backupStateChanged)") })
        for field in [
            "backup_eligible.old=false", "backup_eligible.new=true", "backed_up.old=false", "backed_up.new=true",
            "account.id=\(accountID)",
        ] {
            XCTAssertTrue(line.contains(field), "\(field) in \(line)")
        }

        // The next sign-in with the same flags changes nothing: no write of the row, no second event.
        let before = stored(authenticator)
        _ = try await self.signIn(&authenticator, flags: [.userPresent, .userVerified, .backupEligible, .backedUp])
        XCTAssertEqual(sessions.count, 2)
        XCTAssertEqual(stored(authenticator), before)
        XCTAssertEqual(storedEvents.filter { $0.type == Self.backupStateChanged }.count, 1)
        XCTAssertEqual(log.lines.filter { $0.contains("event=\(Self.backupStateChanged)") }.count, 1)
    }

    func testABackupEligibilityThatGoesIsStoredAndAuditedToo() async throws {
        var authenticator = try await registered(
            flags: [.userPresent, .userVerified, .attestedCredentialData, .backupEligible, .backedUp])
        XCTAssertEqual(stored(authenticator)?.backupEligible, true)
        _ = try await signIn(&authenticator, flags: [.userPresent, .userVerified])
        XCTAssertEqual(stored(authenticator)?.backupEligible, false)
        XCTAssertEqual(stored(authenticator)?.backedUp, false)
        let event = try XCTUnwrap(storedEvents.first { $0.type == Self.backupStateChanged })
        XCTAssertEqual(event.detail["backup_eligible.old"], "true")
        XCTAssertEqual(event.detail["backup_eligible.new"], "false")
        XCTAssertEqual(event.detail["backed_up.old"], "true")
        XCTAssertEqual(event.detail["backed_up.new"], "false")
    }

    func testABackupStateThatChangesAloneIsStoredWithoutABackupEligibilityEvent() async throws {
        var authenticator = try await registered(
            flags: [.userPresent, .userVerified, .attestedCredentialData, .backupEligible])
        for change in [BackupEligibilityChangePolicy.update, .reject] {
            let backedUp = !(stored(authenticator)?.backedUp ?? true)
            _ = try await signIn(
                &authenticator,
                flags: backedUp
                    ? [.userPresent, .userVerified, .backupEligible, .backedUp]
                    : [.userPresent, .userVerified, .backupEligible], change: change)
            XCTAssertEqual(stored(authenticator)?.backedUp, backedUp, "BS is stored under \(change)")
            XCTAssertEqual(stored(authenticator)?.backupEligible, true)
        }
        XCTAssertEqual(sessions.count, 2)
        XCTAssertFalse(storedEvents.contains { $0.type == Self.backupStateChanged })
    }

    func testUnderRejectAChangedBackupEligibilityIsRefusedAndNothingIsStored() async throws {
        for (registration, assertion) in [
            (
                AuthenticatorData.Flags([.userPresent, .userVerified, .attestedCredentialData]),
                AuthenticatorData.Flags([.userPresent, .userVerified, .backupEligible, .backedUp])
            ),
            (
                [.userPresent, .userVerified, .attestedCredentialData, .backupEligible],
                [.userPresent, .userVerified]
            ),
        ] {
            reset()
            var authenticator = try await registered(flags: registration)
            let before = stored(authenticator)
            await assertRefused(reason: "backup_state_invalid") {
                _ = try await self.signIn(&authenticator, flags: assertion, change: .reject)
            }
            XCTAssertEqual(stored(authenticator), before, "the stored flags stay")
            XCTAssertEqual(sessions, [])
            XCTAssertEqual(storedEvents, [])
            XCTAssertEqual(unconsumedChallenges, 0, "the refused sign-in's challenge is spent")
            XCTAssertTrue(log.lines.contains { $0.contains("reason=backup_state_invalid") })
            // The same passkey with its stored flags still signs in.
            let unchanged = registration.subtracting(.attestedCredentialData)
            _ = try await signIn(&authenticator, flags: unchanged, change: .reject)
            XCTAssertEqual(sessions.count, 1)
        }
    }

    func testBackupStateWithoutEligibilityIsRefusedUnderEitherPolicy() async throws {
        for change in [BackupEligibilityChangePolicy.update, .reject] {
            for registration in [
                AuthenticatorData.Flags([.userPresent, .userVerified, .attestedCredentialData]),
                [.userPresent, .userVerified, .attestedCredentialData, .backupEligible, .backedUp],
            ] {
                reset()
                var authenticator = try await registered(flags: registration)
                let before = stored(authenticator)
                await assertRefused(reason: "backup_state_invalid") {
                    _ = try await self.signIn(
                        &authenticator, flags: [.userPresent, .userVerified, .backedUp], change: change)
                }
                XCTAssertEqual(stored(authenticator), before)
                XCTAssertEqual(sessions, [])
                XCTAssertEqual(storedEvents, [])
            }
        }
    }

    func testAChangedBackupEligibilityStillNeedsEveryOtherCheck() async throws {
        var authenticator = try await registered()
        let before = stored(authenticator)
        let (id, challenge) = try await challenges.issueAuthentication()
        var forged = authenticator.makeAssertion(
            challenge: challenge, rpID: Self.rpID, origin: Self.origin,
            flags: [.userPresent, .userVerified, .backupEligible, .backedUp])
        forged.signature[forged.signature.count - 1] ^= 1
        await assertRefused(reason: "signature_invalid") {
            _ = try await self.ceremonies(.update).finishAuthentication(challengeID: id, response: forged)
        }
        let (other, otherChallenge) = try await challenges.issueAuthentication()
        let elsewhere = authenticator.makeAssertion(
            challenge: otherChallenge, rpID: Self.rpID, origin: "https://evil.example",
            flags: [.userPresent, .userVerified, .backupEligible, .backedUp])
        await assertRefused(reason: "origin_mismatch") {
            _ = try await self.ceremonies(.update).finishAuthentication(challengeID: other, response: elsewhere)
        }
        XCTAssertEqual(stored(authenticator), before)
        XCTAssertEqual(sessions, [])
        XCTAssertEqual(storedEvents, [])
    }

    func testAChangeAnotherReplicaStoredFirstIsReadAgainAndNotAuditedTwice() async throws {
        var authenticator = try await registered()
        _ = try await signIn(&authenticator, flags: [.userPresent, .userVerified])  // cached with BE 0
        // Another replica stored BE 1 from a sign-in of its own; this replica's cache still says 0.
        passkeys.state.withLock { state in
            let id = CredentialID(authenticator.credentialID)!
            state.credentials[id]?.backupEligible = true
            state.credentials[id]?.backedUp = true
        }
        _ = try await signIn(&authenticator, flags: [.userPresent, .userVerified, .backupEligible, .backedUp])
        XCTAssertEqual(sessions.count, 2)
        XCTAssertEqual(
            passkeys.state.withLock { $0.calls.filter { $0 == .completeSignIn }.count }, 3,
            "the write against the cached flags found the row moved on, and the sign-in was decided again")
        XCTAssertFalse(storedEvents.contains { $0.type == Self.backupStateChanged }, "the change was not this one's")
        XCTAssertEqual(stored(authenticator)?.backupEligible, true)
    }
}
