import Crypto
import Domain
import Foundation
import Synchronization
import XCTest

/// A clock that moves only when a test moves it, shared by the use cases and the in-memory store under test.
public final class TestClock: Sendable {
    private let current: Mutex<Date>

    /// Starts at `start`: by default 2026-12-01T12:00:00Z, a whole second, so times print exactly.
    public init(start: Date = Date(timeIntervalSince1970: 1_796_126_400)) { current = Mutex(start) }

    public var now: Date { current.withLock { $0 } }

    /// Moves the clock by `interval` seconds (backwards when negative).
    public func advance(by interval: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(interval) } }

    /// The clock as the use cases take it.
    public var read: @Sendable () -> Date { { self.now } }
}

/// Random bytes that differ at every call and are remembered, so a test can tell which draw became what.
public final class RecordingRandom: RandomSource, Sendable {
    private let state = Mutex<(counter: UInt64, draws: [[UInt8]])>((0, []))

    public init() {}

    /// Bytes from a seeded generator, whose seed is the number of the call: distinct and reproducible.
    public func bytes(count: Int) -> [UInt8] {
        state.withLock { state in
            state.counter += 1
            var generator = SplitMix64(seed: state.counter)
            let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            state.draws.append(bytes)
            return bytes
        }
    }

    /// Every draw so far, in order.
    public var draws: [[UInt8]] { state.withLock { $0.draws } }
}

/// SplitMix64 (Steele, Lea and Flood): a small generator whose outputs for nearby seeds are unrelated.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Asserts that `body` throws a `DomainError` with `code`; returns it (nil after a failed assertion).
@discardableResult
public func assertThrowsDomainError(
    _ code: DomainError.Code, _ message: String = "", file: StaticString = #filePath, line: UInt = #line,
    _ body: () async throws -> Void
) async -> DomainError? {
    do {
        try await body()
        XCTFail("no error, expected \(code.rawValue) \(message)", file: file, line: line)
    } catch let error as DomainError {
        XCTAssertEqual(error.code, code, "\(error) \(message)", file: file, line: line)
        return error
    } catch {
        XCTFail("\(error), expected \(code.rawValue) \(message)", file: file, line: line)
    }
    return nil
}

/// Asserts that `body` throws exactly `expected` (an error of a store made to fail, say).
public func assertThrows<E: Error & Equatable>(
    _ expected: E, _ message: String = "", file: StaticString = #filePath, line: UInt = #line,
    _ body: () async throws -> Void
) async {
    do {
        try await body()
        XCTFail("no error, expected \(expected) \(message)", file: file, line: line)
    } catch {
        XCTAssertEqual(error as? E, expected, "\(error) \(message)", file: file, line: line)
    }
}

/// The error a store made to fail throws in these tests: distinct from anything the use cases throw themselves.
public struct StoreDown: Error, Hashable, Sendable {
    public init() {}
}
