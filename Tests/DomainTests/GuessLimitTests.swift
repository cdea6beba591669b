import Domain
import Foundation
import XCTest

/// The budget of failed guesses per account: at most the limit in any period, a refusal that says when to retry, and
/// the claim made near the budget's end.
final class GuessLimitTests: XCTestCase {
    let limit = GuessLimit.standard
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// Failed guesses made as fast as the limit admits them; the level as the store would keep it.
    func admitted(over seconds: TimeInterval, step: TimeInterval) -> [Date] {
        var stored: FailedGuesses?
        var times: [Date] = []
        var time = start
        while time <= start.addingTimeInterval(seconds) {
            // As many as are admitted at this moment, then the clock moves on.
            while true {
                if case .refuse = limit.admission(of: stored, at: time) { break }
                stored = FailedGuesses(level: limit.level(of: stored, at: time) + 1, updatedAt: time)
                times.append(time)
            }
            time = time.addingTimeInterval(step)
        }
        return times
    }

    func testTheStandardLimitIsAHundredAnHourAsABurstOfFiftyThenOneEvery72Seconds() {
        XCTAssertEqual(limit.limit, 100)
        XCTAssertEqual(limit.capacity, 50)
        XCTAssertEqual(limit.claimLevel, 25)
        XCTAssertEqual(limit.secondsPerGuess, 72)
        let times = admitted(over: 3 * 3600, step: 1)
        XCTAssertEqual(times.prefix(50).last, start, "the burst at once")
        XCTAssertEqual(times[50].timeIntervalSince(start), 72, accuracy: 1)
        // No hour, wherever it starts, holds more than the limit.
        for (index, first) in times.enumerated() {
            let inHour = times[index...].prefix { $0.timeIntervalSince(first) < 3600 }.count
            XCTAssertLessThanOrEqual(inHour, 100)
        }
        let firstHour = times.prefix { $0.timeIntervalSince(start) < 3600 }.count
        XCTAssertTrue((98...99).contains(firstHour), "50, then one every 72 s: \(firstHour)")
    }

    func testAFullBudgetRefusesWithTheTimeUntilRoomAndDrains() {
        let full = FailedGuesses(level: 50, updatedAt: start)
        XCTAssertEqual(limit.admission(of: full, at: start), .refuse(retryAfterSeconds: 72))
        XCTAssertEqual(limit.admission(of: full, at: start.addingTimeInterval(70)), .refuse(retryAfterSeconds: 2))
        XCTAssertEqual(limit.admission(of: full, at: start.addingTimeInterval(72)), .claimThenCheck)
        // An attacker who kept guessing left a level far past the capacity: the wait is capped at one period.
        let flooded = FailedGuesses(level: 500, updatedAt: start)
        XCTAssertEqual(limit.admission(of: flooded, at: start), .refuse(retryAfterSeconds: 3600))
        XCTAssertEqual(limit.level(of: full, at: start.addingTimeInterval(3600)), 0)
        XCTAssertEqual(limit.admission(of: full, at: start.addingTimeInterval(7200)), .check)
    }

    func testGuessesClaimTheirPlaceFromHalfTheCapacity() {
        XCTAssertEqual(limit.admission(of: nil, at: start), .check)
        XCTAssertEqual(limit.admission(of: FailedGuesses(level: 24.9, updatedAt: start), at: start), .check)
        XCTAssertEqual(limit.admission(of: FailedGuesses(level: 25, updatedAt: start), at: start), .claimThenCheck)
        XCTAssertEqual(limit.admission(of: FailedGuesses(level: 49, updatedAt: start), at: start), .claimThenCheck)
        XCTAssertEqual(
            limit.admission(of: FailedGuesses(level: 49.01, updatedAt: start), at: start), .refuse(retryAfterSeconds: 1)
        )
    }

    func testAClockBehindTheStoredTimeDrainsNothing() {
        let stored = FailedGuesses(level: 30, updatedAt: start)
        XCTAssertEqual(limit.level(of: stored, at: start.addingTimeInterval(-600)), 30)
        XCTAssertEqual(limit.level(of: stored, at: start.addingTimeInterval(72)), 29, accuracy: 1e-9)
    }

    func testOtherLimitsScale() {
        let small = GuessLimit(limit: 10, period: 600)
        XCTAssertEqual(small.capacity, 5)
        XCTAssertEqual(small.secondsPerGuess, 120)
        XCTAssertEqual(
            small.admission(of: FailedGuesses(level: 5, updatedAt: start), at: start), .refuse(retryAfterSeconds: 120))
    }
}
