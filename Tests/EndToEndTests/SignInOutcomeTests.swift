import Encoding
import Foundation
import PasskeyClient
import Postgres
import PostgresTestSupport
import SoftwareAuthenticator
import WebAuthn
import XCTest

/// A passkey session exists only because verification-service verified an assertion, and is written in the same
/// statement as the passkey's use: there is no recorded use without a session.
final class SignInOutcomeTests: XCTestCase {
    struct StoredPasskey: Equatable {
        var signCount: Int64
        var lastUsedAt: Date?
        var sessions: Int
    }

    func stored(_ authenticator: SoftwareAuthenticator, in stack: Stack) async throws -> StoredPasskey {
        let row = try await stack.sql(
            """
            SELECT c.sign_count, c.last_used_at,
                   (SELECT count(*) FROM authentication_sessions s WHERE s.account_id = c.account_id) AS sessions
            FROM passkey_credentials c WHERE c.credential_id = \(PostgresBytes(authenticator.credentialID))
            """
        ).first!
        return StoredPasskey(
            signCount: try row.decode(Int64.self, "sign_count"), lastUsedAt: try row.decode(Date?.self, "last_used_at"),
            sessions: try row.decode(Int.self, "sessions"))
    }

    func passkeyUser(_ flows: Flows, zeroCounter: Bool) async throws -> SoftwareAuthenticator {
        var authenticator = SoftwareAuthenticator(keepsZeroCounter: zeroCounter)
        let created = try await flows.createPasskeyAccount(authenticator: &authenticator, email: flows.uniqueEmail())
        XCTAssertEqual(created.status, 201, created.description)
        return authenticator
    }

    func testASignInThatCannotBeRecordedIssuesNothingAndTellsTheClientToStartAgain() async throws {
        let stack = try await Stack()
        addTeardownBlock { await stack.tearDown() }
        let flows = Flows(stack)
        for zeroCounter in [false, true] {
            var authenticator = try await passkeyUser(flows, zeroCounter: zeroCounter)
            await assertEqual(try await flows.signInWithPasskey(&authenticator).status, 200)
            // Let the first sign-in's last-use time be written, so nothing is pending below.
            try await Task.sleep(for: .seconds(6))
            let before = try await stored(authenticator, in: stack)

            // The database refuses every new session: the sign-in's one write fails after the challenge was spent.
            _ = try await stack.sql(
                """
                CREATE OR REPLACE FUNCTION refuse_session() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'sessions are refused'; END $$
                """)
            _ = try await stack.sql(
                "CREATE TRIGGER refuse_session BEFORE INSERT ON authentication_sessions FOR EACH ROW EXECUTE FUNCTION refuse_session()"
            )
            let start = try await flows.beginAuthentication()
            let assertion = authenticator.makeAssertion(
                challenge: [UInt8](start.challenge), rpID: Stack.relyingPartyID, origin: Stack.origin)
            let refused = await flows.finishAuthentication(challengeID: start.challengeID, assertion: assertion)
            XCTAssertEqual(refused.status, 503, refused.description)
            XCTAssertEqual(refused.code, .unavailable)
            XCTAssertEqual(refused.reason, .challengeSpent)
            XCTAssertNil(refused.value)
            // The same assertion again: its challenge is spent, whatever the database does now.
            _ = try await stack.sql("DROP TRIGGER refuse_session ON authentication_sessions")
            let again = await flows.finishAuthentication(challengeID: start.challengeID, assertion: assertion)
            XCTAssertEqual(again.status, 410, again.description)
            XCTAssertEqual(again.code, .challengeUnavailable)

            // Nothing of the refused sign-in stayed: no session, no sign count, not even a last-use time.
            try await Task.sleep(for: .seconds(6))
            await assertEqual(try await stored(authenticator, in: stack), before, "zero counter: \(zeroCounter)")

            // A new ceremony signs in.
            let signedIn = try await flows.signInWithPasskey(&authenticator)
            XCTAssertEqual(signedIn.status, 200, signedIn.description)
            let after = try await stored(authenticator, in: stack)
            XCTAssertEqual(after.sessions, before.sessions + 1)
            XCTAssertEqual(after.signCount, zeroCounter ? 0 : Int64(authenticator.signCount))
        }
    }

    func testARemovedSyncedPasskeyIsRefusedByEveryReplicaThatCachedIt() async throws {
        let stack = try await Stack(verificationReplicas: 2)
        addTeardownBlock { await stack.tearDown() }
        let flows = Flows(stack)
        var authenticator = try await passkeyUser(flows, zeroCounter: true)
        // Calls alternate between the replicas: both now hold the passkey in their caches.
        var client: PasskeyAPIClient?
        for _ in 0..<4 {
            let signedIn = try await flows.signInWithPasskey(&authenticator)
            XCTAssertEqual(signedIn.status, 200, signedIn.description)
            client = signedIn.client
        }
        let signedIn = try XCTUnwrap(client)
        let second = SoftwareAuthenticator(keepsZeroCounter: true)
        try await flows.addPasskey(signedIn, authenticator: second)
        let removed = await flows.outcome(
            PasskeyRemovalOperation(credentialID: Data(authenticator.credentialID)), with: signedIn)
        XCTAssertEqual(removed.status, 204, removed.description)
        let sessionsBefore = try await stack.sql("SELECT count(*) AS n FROM authentication_sessions").first!
            .decode(Int.self, "n")
        for attempt in 0..<6 {
            let refused = try await flows.signInWithPasskey(&authenticator)
            XCTAssertEqual(refused.status, 401, "attempt \(attempt): \(refused)")
            XCTAssertEqual(refused.code, .invalidCredentials)
        }
        await assertEqual(
            try await stack.sql("SELECT count(*) AS n FROM authentication_sessions").first!.decode(Int.self, "n"),
            sessionsBefore, "no session for a removed passkey")
        for replica in stack.verification {
            XCTAssertTrue(
                replica.log.contains("reason=unknown_credential"), "a replica never refused it:\n\(replica.log)")
        }
    }

    func testTheLastUseOfAnUnchangedPasskeyIsWrittenWithinSecondsAndBeforeAReplicaStops() async throws {
        let stack = try await Stack()
        addTeardownBlock { await stack.tearDown() }
        let flows = Flows(stack)
        var authenticator = try await passkeyUser(flows, zeroCounter: true)
        let initial = try await stored(authenticator, in: stack)
        XCTAssertNil(initial.lastUsedAt, "a new passkey was never used")

        let signedInAt = Date()
        await assertEqual(try await flows.signInWithPasskey(&authenticator).status, 200)
        // The session is there at once; the use's time follows within the flush interval (5 s), never later than 10 s.
        await assertEqual(try await stored(authenticator, in: stack).sessions, initial.sessions + 1)
        var written: Date?
        for _ in 0..<100 where written == nil {
            written = try await stored(authenticator, in: stack).lastUsedAt
            if written == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        let lastUsedAt = try XCTUnwrap(written, "last_used_at was not written within 10 s")
        XCTAssertEqual(lastUsedAt.timeIntervalSince1970, signedInAt.timeIntervalSince1970, accuracy: 5)

        // A sign-in right before the replica drains: the pending time is written before the process ends.
        try await Task.sleep(for: .milliseconds(20))
        await assertEqual(try await flows.signInWithPasskey(&authenticator).status, 200)
        XCTAssertEqual(stack.verification[0].terminate(), 0)
        let afterStop = try await stored(authenticator, in: stack)
        let flushed = try XCTUnwrap(afterStop.lastUsedAt)
        XCTAssertGreaterThan(flushed, lastUsedAt, "the drained replica left its last batch unwritten")
    }

    func testEachAuditEventIsLoggedOnceByTheServiceThatDecidesItWithTheRequestsOrigin() async throws {
        let stack = try await Stack()
        addTeardownBlock { await stack.tearDown() }
        let flows = Flows(stack)
        var authenticator = try await passkeyUser(flows, zeroCounter: true)
        let signedIn = try await flows.signInWithPasskey(&authenticator)
        XCTAssertEqual(signedIn.status, 200, signedIn.description)
        let requestID = try XCTUnwrap(signedIn.headers["x-request-id"])
        let lines = stack.verification[0].log.split(separator: "\n").filter {
            $0.contains("event=audit.sign_in.succeeded")
        }
        XCTAssertEqual(lines.count, 1, "\(lines)")
        let line = try XCTUnwrap(lines.first)
        XCTAssertTrue(line.contains("request.id=\(requestID)"), String(line))
        XCTAssertTrue(line.contains("client.address=127.0.0.1"), String(line))
        XCTAssertTrue(line.contains("credential.id=\(Base64URL.encode(authenticator.credentialID))"), String(line))
        XCTAssertFalse(stack.gateway.log.contains("event=audit."), "the gateway logged an audit event")
        XCTAssertFalse(stack.verification[0].log.contains("audit.sign_in_"), "an old spelling is still logged")
    }
}
