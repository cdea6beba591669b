import XCTest

// XCTest's assertions take synchronous autoclosures; these take asynchronous ones, so a test can assert on the result
// of an `await` in one line.

public func assertEqual<T: Equatable>(
    _ actual: @autoclosure () async throws -> T, _ expected: @autoclosure () async throws -> T,
    _ message: String = "", file: StaticString = #filePath, line: UInt = #line
) async {
    do {
        let (a, e) = (try await actual(), try await expected())
        XCTAssertEqual(a, e, message, file: file, line: line)
    } catch {
        XCTFail("threw \(error) \(message)", file: file, line: line)
    }
}

public func assertNil<T>(
    _ value: @autoclosure () async throws -> T?, _ message: String = "", file: StaticString = #filePath,
    line: UInt = #line
) async {
    do {
        let resolved = try await value()
        XCTAssertNil(resolved, message, file: file, line: line)
    } catch {
        XCTFail("threw \(error) \(message)", file: file, line: line)
    }
}

public func assertNotNil<T>(
    _ value: @autoclosure () async throws -> T?, _ message: String = "", file: StaticString = #filePath,
    line: UInt = #line
) async {
    do {
        let resolved = try await value()
        XCTAssertNotNil(resolved, message, file: file, line: line)
    } catch {
        XCTFail("threw \(error) \(message)", file: file, line: line)
    }
}

public func assertTrue(
    _ value: @autoclosure () async throws -> Bool, _ message: String = "", file: StaticString = #filePath,
    line: UInt = #line
) async {
    do {
        let resolved = try await value()
        XCTAssertTrue(resolved, message, file: file, line: line)
    } catch {
        XCTFail("threw \(error) \(message)", file: file, line: line)
    }
}

public func assertFalse(
    _ value: @autoclosure () async throws -> Bool, _ message: String = "", file: StaticString = #filePath,
    line: UInt = #line
) async {
    do {
        let resolved = try await value()
        XCTAssertFalse(resolved, message, file: file, line: line)
    } catch {
        XCTFail("threw \(error) \(message)", file: file, line: line)
    }
}
