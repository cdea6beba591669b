import Foundation
import PasskeyClient
import PostgresTestSupport
import SoftwareAuthenticator
import XCTest

/// A replica that has served sign-ins and is stopped with SIGTERM drains and exits 0, every time: a rolling update
/// counts on it, and a crash on the way out (a non-zero status) would read as a failed pod.
final class ShutdownTests: XCTestCase {
    func testEveryServiceExitsZeroAfterSIGTERMHavingServedSignIns() async throws {
        let stack = try await Stack(verificationReplicas: 2)
        addTeardownBlock { await stack.tearDown() }
        let flows = Flows(stack)
        var authenticator = SoftwareAuthenticator(keepsZeroCounter: false)
        let created = try await flows.createPasskeyAccount(authenticator: &authenticator, email: flows.uniqueEmail())
        XCTAssertEqual(created.status, 201, created.description)
        // Each round restarts one verification replica while the other serves, then signs in over both.
        for round in 0..<6 {
            for _ in 0..<4 { await assertEqual(try await flows.signInWithPasskey(&authenticator).status, 200) }
            let replica = stack.verification[round % 2]
            let status = replica.terminate()
            XCTAssertEqual(status, 0, "verification replica exited \(status) after SIGTERM:\n\(replica.log)")
            XCTAssertTrue(replica.log.contains("event=service.stopped"), replica.log)
            try replica.start()
            XCTAssertTrue(waitUntil { isListening(stack.verificationPorts[round % 2]) })
        }
        for _ in 0..<4 { await assertEqual(try await flows.signInWithPasskey(&authenticator).status, 200) }
        for process in [stack.gateway!, stack.challenge!, stack.session!] + stack.verification {
            let status = process.terminate()
            XCTAssertEqual(status, 0, "\(process.executable) exited \(status) after SIGTERM:\n\(process.log)")
        }
    }
}
