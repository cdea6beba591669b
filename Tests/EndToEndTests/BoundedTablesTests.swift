import Foundation
import PasskeyClient
import Postgres
import Synchronization
import XCTest

/// A flood of start requests against the real executables: the replica-wide limits refuse what is over them, and
/// the sweep keeps each ceremony table below what the admitted rate and the rows' lifetimes allow.
final class BoundedTablesTests: XCTestCase {
    /// Starts admitted per second (sign-in and adding a passkey) and sign-ups, each with a burst of 10.
    static let startRate = 50.0
    static let signUpRate = 20.0
    static let burst = 10.0
    /// A row lives a second, and the sweep runs every 200 ms: a row is gone within about 1.5 s of its insert.
    static let environment = [
        "PASSKEY_CHALLENGE_LIFETIME": "1s", "PASSKEY_ACCOUNT_REGISTRATION_LIFETIME": "1s",
        "PASSKEY_SWEEP_INTERVAL": "200ms", "PASSKEY_SWEEP_BATCH_SIZE": "20", "PASSKEY_SWEEP_BATCH_PAUSE": "10ms",
        "PASSKEY_CEREMONY_RETENTION": "0",
        "PASSKEY_RATE_LIMIT_START_GLOBAL": "\(Int(startRate))/s",
        "PASSKEY_RATE_LIMIT_SIGNUP_GLOBAL": "\(Int(signUpRate))/s",
    ]

    /// The rows a table may hold at any moment: everything admitted in the last 3 s (lifetime, sweep interval and a
    /// generous margin for a slow machine), plus the burst.
    static func bound(rate: Double) -> Int { Int(rate * 3 + burst) }

    /// What one kind of start got.
    struct Tally: Sendable {
        var statuses: [Int: Int] = [:]
        var badRefusals = 0
        var failures: [String] = []
        var admitted: Int { statuses[200, default: 0] }
    }

    enum Kind: Int, CaseIterable {
        case signIn, addPasskey, signUp
    }

    typealias RowCounts = (authentication: Int, registration: Int, account: Int)

    /// The flood's outcomes and the table sizes seen during it, from every worker.
    final class Record: Sendable {
        let tallies = Mutex([Kind: Tally]())
        let samples = Mutex<[RowCounts]>([])

        func record<Value>(_ kind: Kind, _ outcome: Outcome<Value>) {
            tallies.withLock { tallies in
                guard let status = outcome.status else {
                    tallies[kind, default: Tally()].failures.append(outcome.description)
                    return
                }
                tallies[kind, default: Tally()].statuses[status, default: 0] += 1
                if status == 429 && (outcome.error?.code != .rateLimited || (outcome.error?.retryAfterSeconds ?? 0) < 1)
                {
                    tallies[kind, default: Tally()].badRefusals += 1
                }
            }
        }
    }

    static func counts(_ stack: Stack) async throws -> RowCounts {
        let row = try await stack.sql(
            """
            SELECT (SELECT count(*) FROM passkey_authentication_challenges) AS authentication,
                   (SELECT count(*) FROM passkey_registration_challenges) AS registration,
                   (SELECT count(*) FROM passkey_account_registrations) AS account
            """
        ).first!
        return (
            try row.decode(Int.self, "authentication"), try row.decode(Int.self, "registration"),
            try row.decode(Int.self, "account")
        )
    }

    func testTablesStayBoundedUnderAFloodOfStartRequests() async throws {
        let stack = try await Stack(environment: Self.environment)
        addTeardownBlock { await stack.tearDown() }
        let flows = Flows(stack)
        let user = try await flows.passwordUser()
        let flood = Record()

        let flooding = Duration.seconds(10)
        let started = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<12 {
                group.addTask {
                    let client = flows.client(retryPolicy: .none)
                    let kind = Kind(rawValue: worker % 3)!
                    while ContinuousClock.now - started < flooding {
                        switch kind {
                        case .signIn:
                            flood.record(kind, await flows.outcome(PasskeyAuthenticationStartOperation(), with: client))
                        case .addPasskey: flood.record(kind, await flows.beginRegistration(user.client))
                        case .signUp:
                            flood.record(
                                kind, await flows.outcome(PasskeyAccountCreationStartOperation(), with: client))
                        }
                    }
                }
            }
            group.addTask {
                while ContinuousClock.now - started < flooding {
                    if let sample = try? await Self.counts(stack) { flood.samples.withLock { $0.append(sample) } }
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
        }
        let duration = ContinuousClock.now - started
        let elapsed = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18

        let results = flood.tallies.withLock { $0 }
        for kind in Kind.allCases {
            let tally = results[kind] ?? Tally()
            XCTAssertEqual(tally.failures, [], "\(kind)")
            XCTAssertEqual(Set(tally.statuses.keys), [200, 429], "\(kind): only successes and refusals")
            XCTAssertEqual(tally.badRefusals, 0, "\(kind): every 429 is rate_limited with Retry-After")
        }
        let starts = results[.signIn, default: Tally()].admitted + results[.addPasskey, default: Tally()].admitted
        let signUps = results[.signUp, default: Tally()].admitted
        // Each limit admits its rate and burst, and not much less: the flood was over both all along.
        for (admitted, rate) in [(starts, Self.startRate), (signUps, Self.signUpRate)] {
            let allowed = rate * elapsed + Self.burst
            XCTAssertLessThanOrEqual(Double(admitted), allowed + 1, "\(results)")
            XCTAssertGreaterThanOrEqual(Double(admitted), allowed * 0.7, "\(results)")
        }

        let observed = flood.samples.withLock { $0 }
        XCTAssertGreaterThan(observed.count, 30, "the tables were sampled throughout")
        let peaks = (
            authentication: observed.map(\.authentication).max() ?? 0,
            registration: observed.map(\.registration).max() ?? 0, account: observed.map(\.account).max() ?? 0
        )
        print("flood of \(elapsed) s: \(results.mapValues(\.statuses)); peak rows \(peaks)")
        // Both kinds of start share one bucket, so their two tables share its bound.
        XCTAssertLessThanOrEqual(peaks.authentication + peaks.registration, Self.bound(rate: Self.startRate))
        XCTAssertLessThanOrEqual(peaks.account, Self.bound(rate: Self.signUpRate))
        // Without the sweep each table would hold everything admitted to it, over twice its bound.
        XCTAssertGreaterThan(starts, 2 * Self.bound(rate: Self.startRate))
        XCTAssertGreaterThan(signUps, 2 * Self.bound(rate: Self.signUpRate))

        // Once the flood stops, every row expires and is swept.
        var left = try await Self.counts(stack)
        for _ in 0..<50 where left.authentication + left.registration + left.account > 0 {
            try await Task.sleep(for: .milliseconds(100))
            left = try await Self.counts(stack)
        }
        XCTAssertEqual(left.authentication + left.registration + left.account, 0, "\(left)")

        let metrics = Flows(baseURL: URL(string: "http://127.0.0.1:\(stack.metricsPorts["challenge-service"]!)")!)
        let text = try await metrics.client().execute(MetricsOperation()).text
        for table in [
            "passkey_authentication_challenges", "passkey_registration_challenges", "passkey_account_registrations",
        ] {
            let prefix = #"sweep_deleted_rows_total{service="challenge-service",table="\#(table)"} "#
            let line = text.split(separator: "\n").first { $0.hasPrefix(prefix) }
            let deleted = line.flatMap { Double($0.dropFirst(prefix.count)) } ?? 0
            XCTAssertGreaterThan(deleted, 0, "\(table): \(line.map(String.init) ?? "no series")")
        }
    }
}
