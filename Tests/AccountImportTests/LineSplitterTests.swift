import AccountImport
import XCTest

final class LineSplitterTests: XCTestCase {
    private func split(_ text: [UInt8], chunk: Int, limit: Int = 16) -> [InputLine] {
        var splitter = LineSplitter(maximumLineBytes: limit)
        var lines: [InputLine] = []
        var offset = 0
        while offset < text.count {
            let piece = Array(text[offset..<min(text.count, offset + chunk)])
            piece.withUnsafeBufferPointer { splitter.feed($0) { lines.append($0) } }
            offset += chunk
        }
        splitter.finish { lines.append($0) }
        return lines
    }

    func testLinesAreTheSameWhateverTheChunkSize() {
        let text = Array("one\r\ntwo\n\nthree that is far too long for the limit\nlast".utf8)
        let expected: [InputLine] = [
            .complete(number: 1, bytes: Array("one".utf8)), .complete(number: 2, bytes: Array("two".utf8)),
            .complete(number: 3, bytes: []), .tooLong(number: 4), .complete(number: 5, bytes: Array("last".utf8)),
        ]
        for chunk in 1...text.count {
            XCTAssertEqual(split(text, chunk: chunk), expected, "chunk \(chunk)")
        }
    }

    func testATrailingLineBreakMakesNoEmptyLastLine() {
        XCTAssertEqual(split(Array("a\nb\n".utf8), chunk: 3).count, 2)
        XCTAssertEqual(split([], chunk: 1), [])
    }

    func testALineOfExactlyTheLimitIsKeptAndOneMoreByteIsTooLong() {
        let exact = [UInt8](repeating: 0x61, count: 16)
        XCTAssertEqual(split(exact + [0x0A], chunk: 5), [.complete(number: 1, bytes: exact)])
        XCTAssertEqual(split(exact + [0x0D, 0x0A], chunk: 5), [.complete(number: 1, bytes: exact)])
        XCTAssertEqual(split(exact + [0x61, 0x0A], chunk: 5), [.tooLong(number: 1)])
    }
}
