import AccountImport
import Encoding
import XCTest

final class ImportOptionsTests: XCTestCase {
    func testArguments() throws {
        let file = try XCTUnwrap(try ImportOptions.parse(["users.jsonl"]))
        XCTAssertEqual(
            file,
            ImportOptions(
                input: "users.jsonl", format: .jsonLines, rejectsPath: "users.jsonl.rejects",
                batchSize: 5000))
        let stdin = try XCTUnwrap(
            try ImportOptions.parse(["--format", "csv", "--rejects", "/tmp/r", "--batch-size", "10", "-"]))
        XCTAssertEqual(stdin, ImportOptions(input: "-", format: .csv, rejectsPath: "/tmp/r", batchSize: 10))
        XCTAssertEqual(try ImportOptions.parse(["-", "--format", "jsonl"])?.rejectsPath, "stdin.rejects")
        XCTAssertNil(try ImportOptions.parse(["--help"]))
        for bad in [
            [], ["-"], ["users.txt"], ["--format", "xml", "a.csv"], ["--batch-size", "0", "a.csv"],
            ["--batch-size", "10001", "a.csv"], ["--batch-size"], ["a.csv", "b.csv"], ["--verbose", "a.csv"],
        ] {
            XCTAssertThrowsError(try ImportOptions.parse(bad), "\(bad)")
        }
    }

    func testRFC3339() {
        XCTAssertEqual(TimestampText.parseRFC3339("1970-01-01T00:00:00Z"), 0)
        XCTAssertEqual(TimestampText.parseRFC3339("1970-01-01t01:00:00+01:00"), 0)
        XCTAssertEqual(TimestampText.parseRFC3339("1970-01-01T00:00:00.123456789z"), 123_456)
        XCTAssertEqual(TimestampText.parseRFC3339("2024-02-29T23:59:59-00:30"), 1_709_252_999_000_000)
        for bad in [
            "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T00:60:00Z",
            "2024-01-01T00:00:60Z", "2024-01-01 00:00:00Z", "2024-01-01T00:00:00", "2024-01-01T00:00:00+0100",
            "2024-01-01T00:00:00.Z", "2024-01-01T00:00:00+24:00", "2024-01-01T00:00:00Zjunk", "24-01-01T00:00:00Z",
        ] {
            XCTAssertNil(TimestampText.parseRFC3339(bad), bad)
        }
    }

    func testProgressText() {
        let half = ImportProgress(bytesRead: 50, totalBytes: 100, lines: 1000, elapsedSeconds: 10)
        XCTAssertEqual(half.bar(width: 10), "[#####-----]  50%  1000 lines  100 lines/s  ETA 0:10")
        XCTAssertEqual(half.line(), "progress: 1000 lines, 50% of the input, 100 lines/s, about 10 s left")
        let pipe = ImportProgress(bytesRead: 50, totalBytes: nil, lines: 10, elapsedSeconds: 2)
        XCTAssertEqual(pipe.bar(), "10 lines  5 lines/s")
        XCTAssertEqual(ImportProgress.duration(3725), "1:02:05")
    }
}
