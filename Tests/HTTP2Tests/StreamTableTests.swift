import XCTest

@testable import HTTP2

final class StreamTableTests: XCTestCase {
    func testInsertsFindsAndRemoves() {
        var table = StreamTable<String>()
        XCTAssertTrue(table.isEmpty)
        table[1] = "one"
        table[3] = "three"
        XCTAssertEqual(table[1], "one")
        XCTAssertEqual(table[3], "three")
        XCTAssertNil(table[5])
        table[3] = "THREE"
        XCTAssertEqual(table[3], "THREE")
        XCTAssertEqual(table.count, 2)
        XCTAssertEqual(table.removeValue(forKey: 1), "one")
        XCTAssertNil(table.removeValue(forKey: 1))
        XCTAssertNil(table[1])
        XCTAssertEqual(table[3], "THREE")
        table[3] = nil
        XCTAssertTrue(table.isEmpty)
    }

    /// IDs that share a home slot in the initial 16 slots (1, 33, 65, 97 → slot 0; 3, 35 → slot 1), removed from
    /// the middle of their probe run: the rest of the run must shift back and stay reachable.
    func testRemovalInsideAProbeRunKeepsEveryEntryReachable() {
        var table = StreamTable<Int32>()
        let colliding: [Int32] = [1, 33, 65, 97, 3, 35]
        for id in colliding { table[id] = id }
        table[33] = nil
        table[1] = nil
        for id in colliding where id != 33 && id != 1 { XCTAssertEqual(table[id], id) }
        XCTAssertEqual(table.count, 4)
        table[1] = 1
        XCTAssertEqual(table[1], 1)
        XCTAssertEqual(table.count, 5)
    }

    /// Random inserts, removals and lookups (with wrap-around at the end of the slots, and growth) against Dictionary.
    func testMatchesDictionaryUnderRandomOperations() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<20 {
            var table = StreamTable<Int>()
            var reference: [Int32: Int] = [:]
            var nextID: Int32 = round % 2 == 0 ? 1 : 2
            for step in 0..<5000 {
                let choice = Int.random(in: 0..<10, using: &generator)
                if choice < 5 || reference.isEmpty {
                    table[nextID] = step
                    reference[nextID] = step
                    // Mostly the next ID, sometimes a jump, so that entries collide and wrap around the slots.
                    nextID += choice == 0 ? 2 * Int32.random(in: 1...40, using: &generator) : 2
                } else if choice < 9 {
                    let victim = reference.keys.randomElement(using: &generator)!
                    XCTAssertEqual(table.removeValue(forKey: victim), reference.removeValue(forKey: victim))
                } else {
                    let probe = Int32.random(in: 1...(nextID + 4), using: &generator)
                    XCTAssertEqual(table[probe], reference[probe])
                }
                if step % 97 == 0 {
                    XCTAssertEqual(table.count, reference.count)
                    for (key, value) in reference { XCTAssertEqual(table[key], value) }
                }
            }
            XCTAssertEqual(Set(table.values), Set(reference.values))
            table.removeAll()
            XCTAssertTrue(table.isEmpty)
            XCTAssertNil(table[1])
        }
    }
}
