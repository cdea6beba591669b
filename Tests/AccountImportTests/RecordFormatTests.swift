import AccountImport
import XCTest

final class RecordFormatTests: XCTestCase {
    private func line(_ text: String, _ number: Int = 2) -> InputLine {
        .complete(number: number, bytes: Array(text.utf8))
    }

    func testJSONLinesReadsEveryFieldAndNullIsAbsent() {
        let parsed = JSONLinesRecords.parse(
            line(
                #"{"email":"a@b.c","displayName":"Ada","passwordHash":null,"externalID":"7","createdAt":"2020-01-01T00:00:00Z","emailVerified":true}"#
            ))
        XCTAssertEqual(
            parsed,
            .record(
                RawImportRecord(
                    values: [
                        .email: "a@b.c", .displayName: "Ada", .externalID: "7", .createdAt: "2020-01-01T00:00:00Z",
                    ],
                    emailVerifiedFlag: true)))
    }

    func testJSONLinesRejections() {
        func reason(_ text: String) -> ImportReject.Reason? {
            if case .rejected(let reject) = JSONLinesRecords.parse(line(text)) { return reject.reason }
            return nil
        }
        XCTAssertEqual(reason(#"{"email":"a@b.c""#), .malformedJSON)
        XCTAssertEqual(reason(#"["a@b.c"]"#), .malformedJSON)
        XCTAssertEqual(reason(#"{"email":"a@b.c","email":"d@e.f"}"#), .malformedJSON)
        XCTAssertEqual(reason(#"{"email":"a@b.c"} x"#), .malformedJSON)
        XCTAssertEqual(reason(#"{"email":"a@b.c","password":"x"}"#), .unknownField)
        XCTAssertEqual(reason(#"{"email":42}"#), .wrongType)
        XCTAssertEqual(reason(#"{"email":"a@b.c","emailVerified":"yes"}"#), .wrongType)
        XCTAssertEqual(reason(#"{"email":"a@b.c","displayName":{"x":1}}"#), .wrongType)
        if case .rejected(let reject) = JSONLinesRecords.parse(.complete(number: 3, bytes: [0x7B, 0xFF, 0x7D])) {
            XCTAssertEqual(reject.reason, .invalidUTF8)
        } else {
            XCTFail("invalid UTF-8 was accepted")
        }
        XCTAssertEqual(JSONLinesRecords.parse(line("  \t")), .blank)
        XCTAssertEqual(
            JSONLinesRecords.parse(.tooLong(number: 4)),
            .rejected(
                ImportReject(.lineTooLong, "longer than \(ImportLimits.maximumLineBytes) bytes")))
    }

    func testAByteOrderMarkOnTheFirstLineIsDropped() {
        let marked = [0xEF, 0xBB, 0xBF] + Array(#"{"email":"a@b.c"}"#.utf8)
        XCTAssertEqual(
            JSONLinesRecords.parse(.complete(number: 1, bytes: marked)),
            .record(RawImportRecord(values: [.email: "a@b.c"])))
    }

    func testCSVHeaderAndRows() throws {
        let csv = try CSVRecords(header: line("email,displayName,externalID", 1))
        XCTAssertEqual(csv.columns, [.email, .displayName, .externalID])
        XCTAssertEqual(
            csv.parse(line(#"a@b.c,"Lovelace, Ada ""the first""",x1"#)),
            .record(
                RawImportRecord(values: [
                    .email: "a@b.c", .displayName: #"Lovelace, Ada "the first""#, .externalID: "x1",
                ])))
        XCTAssertEqual(csv.parse(line("a@b.c,,")), .record(RawImportRecord(values: [.email: "a@b.c"])))
        XCTAssertEqual(
            csv.parse(line(#"a@b.c,"",x"#)), .record(RawImportRecord(values: [.email: "a@b.c", .externalID: "x"])))
        func reason(_ text: String) -> ImportReject.Reason? {
            if case .rejected(let reject) = csv.parse(line(text)) { return reject.reason }
            return nil
        }
        XCTAssertEqual(reason("a@b.c,Ada"), .wrongFieldCount)
        XCTAssertEqual(reason("a@b.c,Ada,x,y"), .wrongFieldCount)
        XCTAssertEqual(reason(#"a@b.c,"Ada,x"#), .malformedCSV)
        XCTAssertEqual(reason(#"a@b.c,"Ada"x,y"#), .malformedCSV)
        XCTAssertEqual(reason(#"a@b.c,A"da,y"#), .malformedCSV)
    }

    func testCSVHeadersThatCannotBeRead() {
        for header in ["displayName", "email,email", "email,password", #"email,"name"#] {
            XCTAssertThrowsError(try CSVRecords(header: line(header, 1)), header)
        }
        XCTAssertThrowsError(try CSVRecords(header: .tooLong(number: 1)))
    }

    func testFormatFromFileName() {
        XCTAssertEqual(ImportFormat(fileName: "users.JSONL"), .jsonLines)
        XCTAssertEqual(ImportFormat(fileName: "users.ndjson"), .jsonLines)
        XCTAssertEqual(ImportFormat(fileName: "/x/users.csv"), .csv)
        XCTAssertNil(ImportFormat(fileName: "users.txt"))
    }
}

final class RecordFormatTruncationTests: XCTestCase {
    /// Every prefix of a good line, fed as the whole line, is a record or a reject with a reason: never a crash.
    func testEveryTruncationOfALineIsDecided() throws {
        let csv = try CSVRecords(header: .complete(number: 1, bytes: Array("email,displayName,externalID".utf8)))
        let csvLine = Array(#"ada@example.com,"Lovelace, Ada ""A""","ü-1""#.utf8)
        let jsonLine = Array(#"{"email":"ada@example.com","displayName":"Ada \"A\" ü","emailVerified":true}"#.utf8)
        for end in 0...jsonLine.count {
            let line = InputLine.complete(number: 2, bytes: Array(jsonLine[..<end]))
            if end == jsonLine.count {
                guard case .record = JSONLinesRecords.parse(line) else { return XCTFail("the whole line") }
            } else if end == 0 {
                XCTAssertEqual(JSONLinesRecords.parse(line), .blank)
            } else if case .record = JSONLinesRecords.parse(line) {
                XCTFail("a truncated JSON line at \(end) was read as a record")
            }
        }
        for end in 0...csvLine.count {
            let parsed = csv.parse(.complete(number: 2, bytes: Array(csvLine[..<end])))
            if end == csvLine.count {
                XCTAssertEqual(
                    parsed,
                    .record(
                        RawImportRecord(
                            values: [
                                .email: "ada@example.com", .displayName: #"Lovelace, Ada "A""#, .externalID: "ü-1",
                            ])))
            }
            if case .record(let record) = parsed { XCTAssertNotNil(record[.email], "at \(end)") }
        }
    }
}
