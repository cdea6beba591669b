import Foundation
import PasskeyClient
import SoftwareAuthenticator
import XCTest

/// Recovery through the client library against the real stack: recovery codes need no mail (the emailed codes are
/// Tests/Recovery's, which reads them from a real SMTP server).
final class RecoveryFlowTests: XCTestCase {
    static let shared = SharedStack()
    override class func tearDown() { shared.stop() }

    func testARecoveryCodeGivesARecoverySessionWhosePasskeySignsIn() async throws {
        let stack = try await Self.shared.get()
        let flows = Flows(stack)
        let user = try await flows.passwordUser()
        let codes = try await user.client.execute(RecoveryCodesOperation()).codes
        XCTAssertEqual(codes.count, 10)

        // Another device, with nothing but the email and a code.
        let device = flows.client()
        let recovery = try await device.execute(
            RecoveryFinishOperation(email: user.email, proof: .recoveryCode(codes[0])))
        XCTAssertEqual(recovery.authenticationMethod, .recovery)
        XCTAssertEqual(recovery.accountID, user.accountID)
        for operation: any PasskeyAPIOperation in [
            AccountOperation(), CurrentSessionOperation(), SessionListOperation(), PasskeyListOperation(),
            RecoveryCodesOperation(),
        ] {
            let refused = await flows.statusAndCode(operation, with: device)
            XCTAssertEqual(refused.status, 403, "\(operation.route)")
            XCTAssertEqual(refused.code, .forbidden)
        }
        let revoked = await flows.statusAndCode(CurrentSessionOperation(), with: user.client)
        XCTAssertEqual(revoked.status, 401, "the account's other sessions were revoked")
        let reused = await flows.statusAndCode(
            RecoveryFinishOperation(email: user.email, proof: .recoveryCode(codes[0])), with: flows.client())
        XCTAssertEqual(reused.status, 400)
        XCTAssertEqual(reused.code, .invalidCode)

        var authenticator = SoftwareAuthenticator()
        let start = try await device.execute(PasskeyRegistrationStartOperation())
        authenticator.userHandle = [UInt8](start.userID)
        let session = try await device.execute(
            RecoveryPasskeyRegistrationFinishOperation(
                challengeID: start.challengeID, credential: authenticator.credential(for: start.options)))
        XCTAssertEqual(session.accountID, user.accountID)
        let current = try await device.execute(CurrentSessionOperation())
        XCTAssertEqual(current.authenticationMethod, .passkey, "the client now holds the new, full session")
        let account = try await device.execute(AccountOperation())
        XCTAssertEqual(account.passkeyCount, 1)
        XCTAssertEqual(account.recoveryCodesRemaining, 9)
        XCTAssertFalse(account.emailVerified)

        let signIn = try await flows.signInWithPasskey(&authenticator)
        XCTAssertEqual(signIn.status, 200, signIn.description)

        // A recovery session the user gives up on signs itself out, and is over at once.
        let abandoned = flows.client()
        _ = try await abandoned.execute(RecoveryFinishOperation(email: user.email, proof: .recoveryCode(codes[1])))
        let signedOut = await flows.statusAndCode(SignOutOperation(), with: abandoned)
        XCTAssertNil(signedOut.code, "signed out")
        let over = await flows.statusAndCode(PasskeyRegistrationStartOperation(), with: abandoned)
        XCTAssertEqual(over.status, 401)
    }
}
