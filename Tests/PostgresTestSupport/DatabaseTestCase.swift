import Foundation
import Postgres
import XCTest

/// A test case with a fresh, empty database of its own for every test method.
open class DatabaseTestCase: XCTestCase {
    public private(set) var database: TestDatabase!

    open override func setUp() async throws {
        try await super.setUp()
        guard let serverURL = TestDatabase.serverURL else {
            XCTFail(
                "DATABASE_URL is not set: run the tests with ./deploy/local/test, which starts a throwaway Postgres")
            throw XCTSkip("no database")
        }
        database = try await TestDatabase(serverURL: serverURL)
    }

    open override func tearDown() async throws {
        try await database?.drop()
        database = nil
        try await super.tearDown()
    }
}

/// A date rounded to whole microseconds, the precision Postgres keeps.
public func microsecondDate(_ date: Date = Date()) -> Date {
    Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1_000_000).rounded() / 1_000_000)
}
