import Postgres
import XCTest

final class HostPreferenceTests: XCTestCase {
    func testTheLastWritableHostComesFirstAndAHostThatStoppedAnsweringLastUntilItsTimeIsUp() throws {
        let hosts = try XCTUnwrap(
            HostPreference(hosts: ["db1", "db2", "db3"], ports: ["5432", "5433", "5434"], suspectSeconds: 30))
        XCTAssertEqual(hosts.order(now: 0), [0, 1, 2], "as listed, before anything is known")
        hosts.connected(host: "db3", port: "5434")
        XCTAssertEqual(hosts.order(now: 1), [2, 0, 1], "the host that took writes first")
        XCTAssertEqual(hosts.connectionAttempts(now: 1)[0].host, "db3,db1,db2")
        XCTAssertEqual(hosts.connectionAttempts(now: 1)[0].port, "5434,5432,5433")
        // The primary freezes: its connection gets no reply. A fresh connection must not try it first when it
        // wakes up still believing it leads.
        hosts.suspect(host: "db3", port: "5434", now: 2)
        XCTAssertEqual(hosts.order(now: 3), [0, 1, 2])
        hosts.connected(host: "db2", port: "5433")
        XCTAssertEqual(hosts.order(now: 4), [1, 0, 2])
        // Thirty seconds on, the old primary is an ordinary host again (a standby by then, skipped by libpq).
        XCTAssertEqual(hosts.order(now: 2 + 30_000_000_000), [1, 0, 2])
        hosts.suspect(host: "db2", port: "5433", now: 40_000_000_000)
        XCTAssertEqual(hosts.order(now: 40_000_000_001), [0, 2, 1])
        // A host the URL does not name changes nothing.
        hosts.connected(host: "elsewhere", port: "5432")
        XCTAssertEqual(hosts.order(now: 40_000_000_002), [0, 2, 1])
    }

    func testOnePortForEveryHostAndOneHostNeedNoOrder() throws {
        let hosts = try XCTUnwrap(HostPreference(hosts: ["a", "b"], ports: ["6432"]))
        XCTAssertEqual(hosts.ports, ["6432", "6432"])
        hosts.connected(host: "b", port: "6432")
        XCTAssertEqual(hosts.connectionAttempts(now: 0)[0].host, "b,a")
        XCTAssertNil(HostPreference(hosts: ["only"], ports: ["5432"]))
        XCTAssertNil(HostPreference(hosts: ["a", "b", "c"], ports: ["1", "2"]))
    }

    func testSuspectHostsAreTriedApartAndByOneConnectionAtATime() throws {
        let hosts = try XCTUnwrap(
            HostPreference(hosts: ["db1", "db2", "db3"], ports: ["5432"], suspectSeconds: 30, probeSeconds: 2))
        func attempts(_ now: UInt64) -> [String] { hosts.connectionAttempts(now: now).map(\.host) }
        XCTAssertEqual(attempts(0), ["db1,db2,db3"], "nothing suspect: one attempt")
        hosts.connected(host: "db1", port: "5432")
        hosts.suspect(host: "db1", port: "5432", now: 1)
        // The frozen primary is tried apart, after the others, and only by the first connection to ask...
        XCTAssertEqual(attempts(2), ["db2,db3", "db1"])
        XCTAssertEqual(attempts(3), ["db2,db3"], "another connection does not wait on it too")
        XCTAssertEqual(attempts(1_000_000_000), ["db2,db3"])
        // ...until the probe interval has passed.
        XCTAssertEqual(attempts(2_000_000_002), ["db2,db3", "db1"])
        // Every host suspect: they are all tried, every time.
        hosts.suspect(host: "db2", port: "5432", now: 3_000_000_000)
        hosts.suspect(host: "db3", port: "5432", now: 3_000_000_000)
        XCTAssertEqual(attempts(3_000_000_001), ["db1,db2,db3"])
        XCTAssertEqual(attempts(3_000_000_002), ["db1,db2,db3"])
        // A host that gives a writable connection is trusted again at once.
        hosts.connected(host: "db3", port: "5432")
        XCTAssertEqual(attempts(3_000_000_003), ["db3"], "the probe interval still runs")
        XCTAssertEqual(attempts(4_000_000_002), ["db3", "db1,db2"])
    }
}
