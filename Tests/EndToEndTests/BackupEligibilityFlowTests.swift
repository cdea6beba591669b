import Foundation
import PasskeyClient
import Postgres
import PostgresTestSupport
import SoftwareAuthenticator
import WebAuthn
import XCTest

/// A passkey whose BE flag changes after registration (KeePassXC 2.7.12, an iCloud Keychain passkey made before sync
/// finished) against the real executables: `PASSKEY_BACKUP_ELIGIBILITY_CHANGE=update` (the default) signs it in,
/// stores the new flags and audits the change; `reject` refuses it.
final class BackupEligibilityFlowTests: XCTestCase {
    static let standard = SharedStack()
    static let rejecting = SharedStack { try await Stack(environment: ["PASSKEY_BACKUP_ELIGIBILITY_CHANGE": "reject"]) }

    override class func tearDown() {
        standard.stop()
        rejecting.stop()
    }

    static let registeredWithoutBackup: AuthenticatorData.Flags = [
        .userPresent, .userVerified, .attestedCredentialData,
    ]
    static let synced: AuthenticatorData.Flags = [.userPresent, .userVerified, .backupEligible, .backedUp]

    /// An account made with a passkey whose BE and BS are 0, like KeePassXC before 2.7.12 made them.
    func keePassXCAccount(_ flows: Flows) async throws -> (SoftwareAuthenticator, Session) {
        var authenticator = SoftwareAuthenticator(keepsZeroCounter: true)
        let created = try await flows.createPasskeyAccount(
            authenticator: &authenticator, email: flows.uniqueEmail("keepassxc"), flags: Self.registeredWithoutBackup)
        XCTAssertEqual(created.status, 201, created.description)
        return (authenticator, try created.get())
    }

    func passkeys(_ flows: Flows, _ client: PasskeyAPIClient) async throws -> [Passkey] {
        try await flows.outcome(PasskeyListOperation(), with: client).get().passkeys
    }

    func testABackupEligibilityThatAppearsAfterRegistrationSignsInAndIsStoredAndAudited() async throws {
        let stack = try await Self.standard.get()
        let flows = Flows(stack)
        var (authenticator, session) = try await keePassXCAccount(flows)
        let registered = try await passkeys(flows, flows.client(token: session.accessToken))
        XCTAssertEqual(registered.map(\.backupEligible), [false])
        XCTAssertEqual(registered.map(\.backedUp), [false])

        // The same passkey now says it is backup eligible and backed up.
        let signIn = try await flows.signInWithPasskey(&authenticator, flags: Self.synced)
        XCTAssertEqual(signIn.status, 200, signIn.description)
        XCTAssertEqual(signIn.value?.accountID, session.accountID)
        let listed = try await passkeys(flows, signIn.client)
        XCTAssertEqual(listed.map(\.backupEligible), [true], "the new BE is stored")
        XCTAssertEqual(listed.map(\.backedUp), [true], "and the new BS")

        // The change is in the audit trail, stored with the sign-in, with the flags before and after.
        let rows = try await stack.sql(
            """
            SELECT detail->>'backup_eligible.old' AS be_old, detail->>'backup_eligible.new' AS be_new,
                   detail->>'backed_up.old' AS bs_old, detail->>'backed_up.new' AS bs_new
            FROM audit_events
            WHERE type = 'audit.passkey.backup_state_changed' AND account_id = \(UUID(uuidString: session.accountID))
            """)
        XCTAssertEqual(rows.count, 1)
        let row = try XCTUnwrap(rows.first)
        XCTAssertEqual(try row.decode(String.self, "be_old"), "false")
        XCTAssertEqual(try row.decode(String.self, "be_new"), "true")
        XCTAssertEqual(try row.decode(String.self, "bs_old"), "false")
        XCTAssertEqual(try row.decode(String.self, "bs_new"), "true")
        XCTAssertTrue(
            stack.verification.map(\.log).joined().contains("audit.passkey.backup_state_changed"),
            "the change is logged as well")

        // Later sign-ins with the new flags change nothing more.
        await assertEqual(try await flows.signInWithPasskey(&authenticator, flags: Self.synced).status, 200)
        let again = try await stack.sql(
            """
            SELECT count(*)::int AS changes FROM audit_events
            WHERE type = 'audit.passkey.backup_state_changed' AND account_id = \(UUID(uuidString: session.accountID))
            """)
        XCTAssertEqual(try again.first?.decode(Int.self, "changes"), 1)
    }

    func testBackupStateWithoutEligibilityIsRefusedWhateverTheSetting() async throws {
        for shared in [Self.standard, Self.rejecting] {
            let flows = Flows(try await shared.get())
            var (authenticator, _) = try await keePassXCAccount(flows)
            let refused = try await flows.signInWithPasskey(
                &authenticator, flags: [.userPresent, .userVerified, .backedUp])
            XCTAssertEqual(refused.status, 401, refused.description)
            XCTAssertEqual(refused.reason, .backupStateInvalid)
        }
    }

    func testUnderRejectTheChangedPasskeyIsRefusedAndKeepsItsFlags() async throws {
        let flows = Flows(try await Self.rejecting.get())
        var (authenticator, session) = try await keePassXCAccount(flows)
        let refused = try await flows.signInWithPasskey(&authenticator, flags: Self.synced)
        XCTAssertEqual(refused.status, 401, refused.description)
        XCTAssertEqual(refused.code, .invalidCredentials)
        XCTAssertEqual(refused.reason, .backupStateInvalid)
        let listed = try await passkeys(flows, flows.client(token: session.accessToken))
        XCTAssertEqual(listed.map(\.backupEligible), [false])
        // With the flags it was registered with, it signs in as before.
        let unchanged = try await flows.signInWithPasskey(&authenticator, flags: [.userPresent, .userVerified])
        XCTAssertEqual(unchanged.status, 200, unchanged.description)
    }
}
