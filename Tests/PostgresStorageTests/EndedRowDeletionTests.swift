import Domain
import Foundation
import Postgres
import PostgresStorage
import PostgresTestSupport
import XCTest

/// The sweeper's statements against real Postgres: bounded batches, retention, concurrency.
final class EndedRowDeletionTests: StorageTestCase {
    func authenticationChallenge(createdAgo: TimeInterval = 1, expiresIn: TimeInterval) -> AuthenticationChallenge {
        let now = microsecondDate()
        return AuthenticationChallenge(
            id: .random(), challenge: randomBytes(32), createdAt: microsecondDate(now.addingTimeInterval(-createdAgo)),
            expiresAt: microsecondDate(now.addingTimeInterval(expiresIn)), consumedAt: nil)
    }

    func count(_ table: String) async throws -> Int {
        try await pool.query("SELECT count(*) AS n FROM \(unsafeSQL: table)").first!.decode(Int.self, "n")
    }

    /// Adds many rows in one statement (the repository adds one at a time).
    func addExpiredAuthenticationChallenges(_ count: Int, expiredSecondsAgo: Int = 60) async throws {
        try await pool.query(
            """
            INSERT INTO passkey_authentication_challenges (id, challenge, created_at, expires_at)
            SELECT gen_random_uuid(), decode(repeat('ab', 32), 'hex'), now() - interval '1 hour',
                   now() - make_interval(secs => \(expiredSecondsAgo))
            FROM generate_series(1, \(count))
            """)
    }

    func testExpiredChallengesGoInBatchesOfTheLimitAndLiveOnesStay() async throws {
        try await addExpiredAuthenticationChallenges(25)
        for _ in 0..<5 { try await storage.authenticationChallenges.add(authenticationChallenge(expiresIn: 300)) }
        let repository = storage.authenticationChallenges
        var batches: [Int] = []
        for _ in 0..<4 { batches.append(try await repository.deleteEnded(before: Date(), limit: 10)) }
        XCTAssertEqual(batches, [10, 10, 5, 0])
        await assertEqual(try await count("passkey_authentication_challenges"), 5)
    }

    func testCeremonyRowsAreKeptForTheRetentionAfterTheyExpireOrAreConsumed() async throws {
        let repository = storage.authenticationChallenges
        let recentlyExpired = authenticationChallenge(createdAgo: 60, expiresIn: -30)
        let consumed = authenticationChallenge(expiresIn: 300)
        let live = authenticationChallenge(expiresIn: 300)
        for challenge in [recentlyExpired, consumed, live] { try await repository.add(challenge) }
        guard case .consumed = try await repository.consume(id: consumed.id) else { return XCTFail("unavailable") }

        // With a retention of a minute, the row that expired 30 s ago and the one consumed just now stay.
        await assertEqual(try await repository.deleteEnded(before: Date().addingTimeInterval(-60), limit: 100), 0)
        await assertEqual(try await count("passkey_authentication_challenges"), 3)
        // Past the retention both go (one by expires_at, one by consumed_at); the live one never does.
        await assertEqual(try await repository.deleteEnded(before: Date().addingTimeInterval(1), limit: 100), 2)
        let left = try await pool.query("SELECT id FROM passkey_authentication_challenges")
            .map { ChallengeID(try $0.decode(UUID.self, "id")) }
        XCTAssertEqual(left, [live.id])
        await assertEqual(try await repository.deleteEnded(before: Date().addingTimeInterval(1), limit: 100), 0)
    }

    func testOneBatchCountsExpiredAndConsumedRowsTogetherAgainstTheLimit() async throws {
        let repository = storage.authenticationChallenges
        try await addExpiredAuthenticationChallenges(3)
        var consumed: [AuthenticationChallenge] = []
        for _ in 0..<4 {
            let challenge = authenticationChallenge(expiresIn: 300)
            try await repository.add(challenge)
            guard case .consumed = try await repository.consume(id: challenge.id) else { return XCTFail("unavailable") }
            consumed.append(challenge)
        }
        let cutoff = Date().addingTimeInterval(1)
        await assertEqual(try await repository.deleteEnded(before: cutoff, limit: 5), 5)
        await assertEqual(try await repository.deleteEnded(before: cutoff, limit: 5), 2)
        await assertEqual(try await count("passkey_authentication_challenges"), 0)
    }

    func testRegistrationChallengesAndAccountRegistrationsAreSweptTheSameWay() async throws {
        let account = try await storedPasswordAccount()
        let now = microsecondDate()
        func registrationChallenge(expiresIn: TimeInterval) -> RegistrationChallenge {
            RegistrationChallenge(
                id: .random(), accountID: account.id, challenge: randomBytes(32), mode: .modal,
                createdAt: now.addingTimeInterval(-600), expiresAt: now.addingTimeInterval(expiresIn), consumedAt: nil)
        }
        let expired = registrationChallenge(expiresIn: -120)
        let consumed = registrationChallenge(expiresIn: 300)
        let live = registrationChallenge(expiresIn: 300)
        for challenge in [expired, consumed, live] { try await storage.registrationChallenges.add(challenge) }
        guard case .consumed = try await storage.registrationChallenges.consume(id: consumed.id, accountID: account.id)
        else { return XCTFail("unavailable") }
        await assertEqual(
            try await storage.registrationChallenges.deleteEnded(before: now.addingTimeInterval(-60), limit: 100), 1)
        await assertEqual(
            try await storage.registrationChallenges.deleteEnded(before: Date().addingTimeInterval(1), limit: 100), 1)
        guard case .consumed = try await storage.registrationChallenges.consume(id: live.id, accountID: account.id)
        else { return XCTFail("the sweep took a live challenge") }

        func accountRegistration(expiresIn: TimeInterval) -> AccountRegistration {
            AccountRegistration(
                id: .random(), prospectiveAccountID: .random(), userHandle: UserHandle(randomBytes(32))!, email: nil,
                displayName: nil, challenge: randomBytes(32), createdAt: now.addingTimeInterval(-900),
                expiresAt: now.addingTimeInterval(expiresIn), consumedAt: nil, completedAt: nil)
        }
        let expiredRegistration = accountRegistration(expiresIn: -120)
        let consumedRegistration = accountRegistration(expiresIn: 600)
        let liveRegistration = accountRegistration(expiresIn: 600)
        for registration in [expiredRegistration, consumedRegistration, liveRegistration] {
            try await storage.accountRegistrations.add(registration)
        }
        guard case .consumed = try await storage.accountRegistrations.consume(id: consumedRegistration.id) else {
            return XCTFail("unavailable")
        }
        await assertEqual(
            try await storage.accountRegistrations.deleteEnded(before: now.addingTimeInterval(-60), limit: 100), 1)
        await assertEqual(
            try await storage.accountRegistrations.deleteEnded(before: Date().addingTimeInterval(1), limit: 100), 1)
        guard case .consumed = try await storage.accountRegistrations.consume(id: liveRegistration.id) else {
            return XCTFail("the sweep took a live registration")
        }
    }

    func testEndedSessionsGoInBatchesAfterTheRetentionAndLiveOnesStay() async throws {
        let account = try await storedPasswordAccount()
        let now = microsecondDate()
        func session(createdAgo: TimeInterval, expiresIn: TimeInterval) -> AuthenticationSession {
            AuthenticationSession(
                id: .random(), accountID: account.id, tokenDigest: randomBytes(32), authenticationMethod: .passkey,
                createdAt: now.addingTimeInterval(-createdAgo), expiresAt: now.addingTimeInterval(expiresIn),
                revokedAt: nil)
        }
        let longExpired = session(createdAgo: 40 * 86_400, expiresIn: -10 * 86_400)
        let recentlyExpired = session(createdAgo: 30 * 86_400, expiresIn: -3600)
        let revokedLongAgo = session(createdAgo: 20 * 86_400, expiresIn: 10 * 86_400)
        let revokedJustNow = session(createdAgo: 3600, expiresIn: 86_400)
        let live = session(createdAgo: 60, expiresIn: 86_400)
        for session in [longExpired, recentlyExpired, revokedLongAgo, revokedJustNow, live] {
            try await storage.sessions.add(session)
        }
        let nineDaysAgo = now.addingTimeInterval(-9 * 86_400)
        await assertEqual(
            try await storage.sessions.revoke(id: revokedLongAgo.id, of: account.id, at: nineDaysAgo), true)
        await assertEqual(try await storage.sessions.revoke(id: revokedJustNow.id, of: account.id, at: now), true)

        // A week's retention: the session that expired ten days ago and the one revoked nine days ago go, one per
        // batch; the others stay.
        let cutoff = now.addingTimeInterval(-7 * 86_400)
        var batches: [Int] = []
        for _ in 0..<3 { batches.append(try await storage.sessions.deleteEnded(before: cutoff, limit: 1)) }
        XCTAssertEqual(batches, [1, 1, 0])
        let left = Set(
            try await pool.query("SELECT id FROM authentication_sessions").map {
                SessionID(try $0.decode(UUID.self, "id"))
            })
        XCTAssertEqual(left, [recentlyExpired.id, revokedJustNow.id, live.id])
        await assertNotNil(try await storage.sessions.find(id: live.id))
    }

    func testRevokedSessionsCanBeFoundThroughAnIndex() async throws {
        // On a small table the planner may rightly prefer a scan; with scans off, the index must serve the query.
        let plan = try await pool.transaction { connection in
            try connection.execute("SET LOCAL enable_seqscan = off")
            return try connection.execute(
                "EXPLAIN SELECT id FROM authentication_sessions WHERE revoked_at < now() LIMIT 10 FOR UPDATE SKIP LOCKED"
            ).map { try $0.decode(String.self, "QUERY PLAN") }.joined(separator: "\n")
        }
        XCTAssertTrue(plan.contains("authentication_sessions_revoked_at_idx"), plan)
    }

    func testConcurrentSweepersDeleteEveryRowExactlyOnce() async throws {
        try await addExpiredAuthenticationChallenges(3000)
        let repository = storage.authenticationChallenges
        // Four replicas sweeping at once, in batches of 100, until each finds nothing.
        let totals = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    var total = 0
                    while true {
                        let deleted = try await repository.deleteEnded(before: Date(), limit: 100)
                        XCTAssertLessThanOrEqual(deleted, 100)
                        total += deleted
                        if deleted == 0 { return total }
                    }
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        XCTAssertEqual(totals.reduce(0, +), 3000)
        await assertEqual(try await count("passkey_authentication_challenges"), 0)
    }

    func testASweepSkipsARowAnotherTransactionHoldsInsteadOfWaitingForIt() async throws {
        try await addExpiredAuthenticationChallenges(20)
        let held = try await pool.query("SELECT id FROM passkey_authentication_challenges LIMIT 1").first!
            .decode(UUID.self, "id")
        let locked = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Task { [pool] in
            try await pool!.transaction { connection in
                try connection.execute("SELECT id FROM passkey_authentication_challenges WHERE id = \(held) FOR UPDATE")
                locked.signal()
                // A worker thread of the pool's own: blocking here keeps the transaction and its row lock open.
                release.wait()
            }
        }
        while locked.wait(timeout: .now()) == .timedOut { try await Task.sleep(for: .milliseconds(10)) }
        let started = ContinuousClock.now
        let deleted = try await storage.authenticationChallenges.deleteEnded(before: Date(), limit: 100)
        let waited = started.duration(to: .now)
        release.signal()
        try await holder.value
        XCTAssertEqual(deleted, 19, "every row but the held one")
        XCTAssertLessThan(waited, .seconds(2), "the sweep waited for the lock")
        await assertEqual(try await storage.authenticationChallenges.deleteEnded(before: Date(), limit: 100), 1)
    }
}
