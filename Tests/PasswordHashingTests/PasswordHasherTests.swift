import PasswordHashing
import XCTest

final class PasswordHasherTests: XCTestCase {
    // Cheap parameters keep the suite fast; one test checks the production defaults.
    let hasher = PasswordHasher(parameters: .init(memoryKiB: 256, iterations: 1, parallelism: 1))

    func testRecommendedParametersProduceTheExpectedPHCString() throws {
        let hash = try PasswordHasher().hash("correct horse battery staple")
        XCTAssertTrue(hash.hasPrefix("$argon2id$v=19$m=19456,t=2,p=1$"), hash)
        XCTAssertTrue(PasswordHasher().verify("correct horse battery staple", against: hash))
    }

    func testRightPasswordVerifiesAndWrongOneDoesNot() throws {
        let hash = try hasher.hash("pässwörd 🔑")
        XCTAssertTrue(hasher.verify("pässwörd 🔑", against: hash))
        XCTAssertFalse(hasher.verify("pässwörd 🔑 ", against: hash))
        XCTAssertFalse(hasher.verify("", against: hash))
    }

    func testSaltsDiffer() throws {
        XCTAssertNotEqual(try hasher.hash("same"), try hasher.hash("same"))
    }

    func testMalformedOrAbusiveStoredHashesNeverMatch() throws {
        let good = try hasher.hash("pw")
        for bad in [
            "", "plain", "$argon2i$v=19$m=256,t=1,p=1$c2FsdHNhbHQ$aGFzaA", "$argon2id$v=16$m=256,t=1,p=1$c2FsdA$aGFzaA",
            "$argon2id$v=19$m=99999999,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2g",
            "$argon2id$v=19$m=256,t=1000,p=1$c2FsdA$aGFzaA",
            good + "x", String(good.dropLast(2)),
        ] {
            XCTAssertFalse(hasher.verify("pw", against: bad), bad)
        }
    }

    func testOverlongPasswordsAreRefused() {
        let long = String(repeating: "a", count: PasswordHasher.maximumPasswordLength + 1)
        XCTAssertThrowsError(try hasher.hash(long)) { XCTAssertEqual($0 as? PasswordHashingError, .passwordTooLong) }
    }

    func testDummyVerificationNeverSucceedsAndCostsAboutAsMuch() throws {
        let real = PasswordHasher()
        let hash = try real.hash("pw")
        let clock = ContinuousClock()
        // The fastest of three runs each, so a busy machine's pauses do not decide the comparison.
        let realTime = (0..<3).map { _ in clock.measure { _ = real.verify("wrong", against: hash) } }.min()!
        let dummyTime = (0..<3).map { _ in clock.measure { XCTAssertFalse(real.verifyDummy("wrong")) } }.min()!
        // Same parameters, same work: within a factor of three even on a busy machine.
        XCTAssertLessThan(dummyTime, realTime * 3)
        XCTAssertGreaterThan(dummyTime, realTime / 3)
    }

    func testRehashIsNeededWhenParametersChange() throws {
        let hash = try hasher.hash("pw")
        XCTAssertFalse(hasher.needsRehash(hash))
        XCTAssertTrue(PasswordHasher().needsRehash(hash))
        XCTAssertTrue(hasher.needsRehash("garbage"))
    }
}

final class PasswordHashingPoolTests: XCTestCase {
    func testHashAndVerifyOffTheCooperativePool() async throws {
        let pool = PasswordHashingPool(
            hasher: PasswordHasher(parameters: .init(memoryKiB: 256, iterations: 1, parallelism: 1)), threadCount: 2)
        defer { pool.shutdown() }
        let hash = try await pool.hash("secret")
        let right = try await pool.verify("secret", against: hash)
        let wrong = try await pool.verify("Secret", against: hash)
        let dummy = try await pool.verifyDummy("secret")
        XCTAssertTrue(right)
        XCTAssertFalse(wrong)
        XCTAssertFalse(dummy)
    }

    func testAFloodIsRefusedWhenTheQueueIsFull() async throws {
        let pool = PasswordHashingPool(hasher: PasswordHasher(), threadCount: 1, maximumQueueLength: 2)
        defer { pool.shutdown() }
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    do {
                        _ = try await pool.verifyDummy("x")
                        return true
                    } catch {
                        XCTAssertEqual(error as? PasswordHashingError, .busy)
                        return false
                    }
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        XCTAssertGreaterThan(outcomes.filter { !$0 }.count, 0, "nothing was refused")
        XCTAssertGreaterThan(outcomes.filter { $0 }.count, 0, "nothing was served")
    }
}
