import HTTP2
import XCTest

final class HTTP2HeaderBlockTests: XCTestCase {
    func testLookupsCompareBytes() {
        let block = HTTP2HeaderBlock([
            HTTP2Header(":method", "POST"), HTTP2Header(":path", "/a.B/C"),
            HTTP2Header("content-type", "application/grpc"),
            HTTP2Header("x-empty", ""), HTTP2Header("grpc-timeout", "1S"),
        ])
        XCTAssertEqual(block.count, 5)
        XCTAssertTrue(block.nameEquals(at: 0, ":method"))
        XCTAssertFalse(block.nameEquals(at: 0, ":path"))
        XCTAssertTrue(block.valueEquals(at: 0, "POST"))
        XCTAssertFalse(block.valueEquals(at: 0, "POS"))
        XCTAssertTrue(block.nameHasPrefix(at: 4, "grpc-"))
        XCTAssertFalse(block.nameHasPrefix(at: 3, "x-empty-longer"))
        XCTAssertTrue(block.valueEquals(at: 3, ""))
        XCTAssertEqual(block.value(forName: ":path"), "/a.B/C")
        XCTAssertNil(block.value(forName: "missing"))
        XCTAssertEqual(block.headers.map(\.name), [":method", ":path", "content-type", "x-empty", "grpc-timeout"])
        XCTAssertEqual(block.value(at: 2), "application/grpc")
    }

    func testEmptyBlock() {
        let block = HTTP2HeaderBlock()
        XCTAssertEqual(block.count, 0)
        XCTAssertNil(block.value(forName: ":path"))
        XCTAssertEqual(block.headers, [])
    }

    func testPreparedListKeepsFields() {
        let list = HTTP2HeaderList([HTTP2Header(":status", "200"), HTTP2Header("content-type", "application/grpc")])
        XCTAssertEqual(list.count, 2)
        XCTAssertEqual(HTTP2HeaderList([]).count, 0)
    }
}
