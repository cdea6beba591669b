import Encoding
import Foundation
import Synchronization
import XCTest

final class UUIDTextTests: XCTestCase {
    func testRandomUUIDsAreVersion4WithTheRFCVariantAndDistinct() {
        var seen = Set<UUID>()
        for _ in 0..<1_000 {
            let id = UUID.randomV4()
            XCTAssertEqual(id.uuid.6 >> 4, 4, "version nibble")
            XCTAssertEqual(id.uuid.8 >> 6, 0b10, "variant bits")
            seen.insert(id)
        }
        XCTAssertEqual(seen.count, 1_000)
    }

    func testTimeOrderedUUIDsAreVersion7AndSortByTheirMillisecond() {
        let date = Date(timeIntervalSince1970: 1_764_633_600.123)  // 2025-12-02T00:00:00.123Z
        let id = UUID.timeOrderedV7(at: date)
        XCTAssertEqual(id.uuid.6 >> 4, 7, "version nibble")
        XCTAssertEqual(id.uuid.8 >> 6, 0b10, "variant bits")
        // The first 48 bits are the Unix time in milliseconds, big-endian.
        XCTAssertEqual(id.lowercaseText.prefix(13), "019adc5b-e07b")
        var previous = UUID.timeOrderedV7(at: date).lowercaseText
        var seen = Set([previous])
        for step in 1...500 {
            // Half a millisecond in, so the binary fraction cannot round down into the millisecond before.
            let next = UUID.timeOrderedV7(
                at: Date(timeIntervalSince1970: (1_764_633_600_123 + Double(step) + 0.5) / 1000)
            )
            .lowercaseText
            XCTAssertLessThan(previous, next, "a later millisecond sorts later")
            seen.insert(next)
            previous = next
        }
        XCTAssertEqual(seen.count, 501)
        XCTAssertNotEqual(UUID.timeOrderedV7(at: date), UUID.timeOrderedV7(at: date), "random bits differ")
    }

    func testTextMatchesFoundationLowercased() {
        for _ in 0..<200 {
            let id = UUID()
            XCTAssertEqual(id.lowercaseText, id.uuidString.lowercased())
        }
        let fixed = UUID(
            uuid: (0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF))
        XCTAssertEqual(fixed.lowercaseText, "00010203-0405-0607-0809-aabbccddeeff")
    }

    func testParsesBothCasesAndRoundTrips() {
        for _ in 0..<200 {
            let id = UUID.randomV4()
            XCTAssertEqual(UUID(text: id.lowercaseText), id)
            XCTAssertEqual(UUID(text: id.uuidString), id)
            XCTAssertEqual(UUID(text: Substring(id.lowercaseText)), id)
        }
    }

    func testRejectsEverythingButTheCanonicalForm() {
        let valid = "00010203-0405-0607-0809-aabbccddeeff"
        var candidates = [
            "", "0", valid.dropLast().description, valid + "0", valid.replacingOccurrences(of: "-", with: ""),
            "{" + valid + "}", " " + valid.dropFirst(), "00010203x0405-0607-0809-aabbccddeeff",
            "0001020-30405-0607-0809-aabbccddeeff", "g0010203-0405-0607-0809-aabbccddeeff",
            "00010203-0405-0607-0809-aabbccddeefé",
        ]
        // Every single-character change to a non-hex, non-dash character, at every position.
        // Stricter than Foundation's sscanf-based parser, which lets leading whitespace through.
        for index in 0..<36 {
            var characters = Array(valid)
            characters[index] = "z"
            candidates.append(String(characters))
        }
        for candidate in candidates {
            XCTAssertNil(UUID(text: candidate), candidate)
        }
    }
}

final class DecimalTextTests: XCTestCase {
    func testZeroPaddedDigits() {
        let cases: [(Int64, Int, String)] = [
            (0, 1, "0"), (7, 2, "07"), (2026, 4, "2026"), (123_456, 6, "123456"), (42, 6, "000042"),
            (12345, 2, "12345"),
            (-3, 4, "-0003"), (Int64.max, 1, "9223372036854775807"), (Int64.min, 1, "-9223372036854775808"),
        ]
        for (value, width, expected) in cases {
            var output: [UInt8] = Array("x".utf8)
            DecimalText.append(value, width: width, to: &output)
            XCTAssertEqual(String(decoding: output, as: UTF8.self), "x" + expected)
        }
    }
}

final class DecimalParsingAndTimestampTests: XCTestCase {
    func testDigitsParseAndAnythingElseIsRefused() {
        XCTAssertEqual(DecimalText.parse(Array("0".utf8)), 0)
        XCTAssertEqual(DecimalText.parse(Array("007".utf8)), 7)
        XCTAssertEqual(DecimalText.parse(Array("999999999999999999".utf8)), 999_999_999_999_999_999)
        for bad in ["", "-1", "+1", " 1", "1 ", "1a", "0x1", "1234567890123456789"] {
            XCTAssertNil(DecimalText.parse(Array(bad.utf8)), bad)
        }
    }

    func testTimestampsWithAnyFractionAndBeforeTheEpoch() {
        let micros: Int64 = 1_795_984_459_214_987
        XCTAssertEqual(TimestampText.string(unixMicroseconds: micros, fractionDigits: 0), "2026-11-29T20:34:19Z")
        XCTAssertEqual(TimestampText.string(unixMicroseconds: micros, fractionDigits: 3), "2026-11-29T20:34:19.214Z")
        XCTAssertEqual(TimestampText.string(unixMicroseconds: micros, fractionDigits: 6), "2026-11-29T20:34:19.214987Z")
        XCTAssertEqual(TimestampText.string(unixMicroseconds: -1, fractionDigits: 6), "1969-12-31T23:59:59.999999Z")
        XCTAssertEqual(
            TimestampText.string(unixMicroseconds: 951_782_400_000_000, fractionDigits: 0), "2000-02-29T00:00:00Z")
        XCTAssertEqual(TimestampText.daysFromCivil(year: 2000, month: 2, day: 29), 11_016)
        XCTAssertEqual(TimestampText.daysFromCivil(year: 1969, month: 12, day: 31), -1)
    }
}

final class IdentifierRandomTests: XCTestCase {
    /// Draws from several threads at once across many refills: no value repeats, and every bit is set about half
    /// the time (a stuck or zeroed buffer would fail both).
    func testConcurrentDrawsAreDistinctAndEveryBitVaries() {
        let perThread = 4_000
        let draws = Mutex<[UInt64]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let values = (0..<perThread).map { _ in IdentifierRandom.next() }
            draws.withLock { $0.append(contentsOf: values) }
        }
        let results = draws.withLock { $0 }
        XCTAssertEqual(results.count, 4 * perThread)
        XCTAssertEqual(Set(results).count, results.count)
        for bit in 0..<64 {
            let ones = results.reduce(0) { $0 + Int(($1 >> UInt64(bit)) & 1) }
            XCTAssertGreaterThan(ones, results.count * 45 / 100, "bit \(bit)")
            XCTAssertLessThan(ones, results.count * 55 / 100, "bit \(bit)")
        }
    }
}
