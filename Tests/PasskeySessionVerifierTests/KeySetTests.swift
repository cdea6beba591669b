import AccessTokenSigning
import AccessTokens
import Encoding
import Foundation
import JSON
import XCTest

@testable import PasskeySessionVerifier

/// How the verifier fetches, caches and refetches the key set: its lifetime, the bounded refetch on an unknown
/// `kid`, failures, and concurrent verifications.
final class KeySetTests: XCTestCase {
    func code(of token: String, _ verifier: PasskeySessionVerifier) async -> SessionVerifierError.Code? {
        do {
            _ = try await verifier.verify(token)
            return nil
        } catch {
            return error.code
        }
    }

    func testAnUnknownKidRefetchesOnceAndAnotherWithinTheIntervalNotAtAll() async throws {
        let harness = Harness()
        _ = try await harness.verifier.verify(harness.es256.token(harness.claims()))
        XCTAssertEqual(harness.fetcher.requests, 1)
        harness.clock.advance(by: .seconds(31))
        let stranger = TestSigningKey(.es256)
        let unknown = await code(of: stranger.token(harness.claims()), harness.verifier)
        XCTAssertEqual(unknown, .unknownKey)
        XCTAssertEqual(harness.fetcher.requests, 2, "an unknown kid refetches")
        harness.clock.advance(by: .seconds(29))
        let another = await code(of: TestSigningKey(.es256).token(harness.claims()), harness.verifier)
        XCTAssertEqual(another, .unknownKey)
        XCTAssertEqual(harness.fetcher.requests, 2, "not within 30 s of the last fetch")
        harness.clock.advance(by: .seconds(1))
        _ = await code(of: stranger.token(harness.claims()), harness.verifier)
        XCTAssertEqual(harness.fetcher.requests, 3, "again once 30 s have passed")
    }

    func testAKeyPublishedLaterIsFoundByTheRefetchItsKidPrompts() async throws {
        let harness = Harness()
        _ = try await harness.verifier.verify(harness.es256.token(harness.claims()))
        let rotatedIn = TestSigningKey(.es256)
        harness.fetcher.update { $0.keys.append(rotatedIn.publicKey) }
        harness.clock.advance(by: .seconds(30))
        let session = try await harness.verifier.verify(rotatedIn.token(harness.claims(sessionID: "ses_new")))
        XCTAssertEqual(session.sessionID, "ses_new")
        XCTAssertEqual(harness.fetcher.requests, 2)
    }

    func testAFailingKeySetURLIsTriedOncePerInterval() async {
        let harness = Harness()
        harness.fetcher.update { $0.failing = true }
        let token = harness.es256.token(harness.claims())
        let first = await code(of: token, harness.verifier)
        XCTAssertEqual(first, .keySetUnavailable)
        let second = await code(of: token, harness.verifier)
        XCTAssertEqual(second, .keySetUnavailable)
        XCTAssertEqual(harness.fetcher.requests, 1, "a failing key set URL is tried once per interval")
        harness.fetcher.update { $0.failing = false }
        harness.clock.advance(by: .seconds(30))
        let recovered = await code(of: token, harness.verifier)
        XCTAssertNil(recovered)
        XCTAssertEqual(harness.fetcher.requests, 2)
    }

    func testCacheControlMaxAgeIsHonoured() async throws {
        let harness = Harness(headers: ["Cache-Control": "public, max-age=120"])
        let token = harness.es256.token(harness.claims())
        _ = try await harness.verifier.verify(token)
        harness.clock.advance(by: .seconds(119))
        _ = try await harness.verifier.verify(token)
        XCTAssertEqual(harness.fetcher.requests, 1, "fresh for max-age")
        harness.clock.advance(by: .seconds(1))
        _ = try await harness.verifier.verify(token)
        XCTAssertEqual(harness.fetcher.requests, 2, "fetched again once max-age has passed")
        _ = try await harness.verifier.verify(token)
        XCTAssertEqual(harness.fetcher.requests, 2)
    }

    func testWithoutCacheControlTheSetIsFreshForFiveMinutes() async throws {
        let harness = Harness()
        let token = harness.es256.token(harness.claims())
        _ = try await harness.verifier.verify(token)
        harness.clock.advance(by: .seconds(299))
        _ = try await harness.verifier.verify(token)
        XCTAssertEqual(harness.fetcher.requests, 1)
        harness.clock.advance(by: .seconds(1))
        _ = try await harness.verifier.verify(token)
        XCTAssertEqual(harness.fetcher.requests, 2)
    }

    func testAKeyDroppedFromTheSetIsNoLongerAccepted() async throws {
        let harness = Harness(algorithms: [.es256, .edDSA])
        _ = try await harness.verifier.verify(harness.edDSA.token(harness.claims()))
        harness.fetcher.update { $0.keys = [harness.es256.publicKey] }
        harness.clock.advance(by: .seconds(300))
        let token = harness.edDSA.token(harness.claims())
        let retired = await code(of: token, harness.verifier)
        XCTAssertEqual(retired, .unknownKey)
        XCTAssertEqual(harness.fetcher.requests, 2)
    }

    func testAFailingFetchKeepsTheCachedKeys() async throws {
        let harness = Harness(headers: ["Cache-Control": "max-age=60"])
        _ = try await harness.verifier.verify(harness.es256.token(harness.claims()))
        harness.fetcher.update { $0.failing = true }
        harness.clock.advance(by: .seconds(61))
        _ = try await harness.verifier.verify(harness.es256.token(harness.claims()))
        XCTAssertEqual(harness.fetcher.requests, 2, "the stale set was refetched, and that failed")
        harness.clock.advance(by: .seconds(10))
        _ = try await harness.verifier.verify(harness.es256.token(harness.claims()))
        XCTAssertEqual(harness.fetcher.requests, 2, "a failed fetch is not retried within 30 s")
        harness.fetcher.update {
            $0.failing = false
            $0.status = 503
        }
        harness.clock.advance(by: .seconds(20))
        _ = try await harness.verifier.verify(harness.es256.token(harness.claims()))
        XCTAssertEqual(harness.fetcher.requests, 3, "an error status is a failure too")
        harness.fetcher.update {
            $0.status = 200
            $0.body = Array("<html>maintenance</html>".utf8)
        }
        harness.clock.advance(by: .seconds(30))
        _ = try await harness.verifier.verify(harness.es256.token(harness.claims()))
        XCTAssertEqual(harness.fetcher.requests, 4, "and so is a body that is no JWKS")
        let unknown = await code(of: TestSigningKey(.es256).token(harness.claims()), harness.verifier)
        XCTAssertEqual(unknown, .unknownKey)
    }

    func testLoadKeysFetchesOnceAndReportsAFailure() async throws {
        let harness = Harness()
        try await harness.verifier.loadKeys()
        try await harness.verifier.loadKeys()
        XCTAssertEqual(harness.fetcher.requests, 1, "a fresh set is not fetched again")
        _ = try await harness.verifier.verify(harness.es256.token(harness.claims()))
        XCTAssertEqual(harness.fetcher.requests, 1)

        let failing = Harness()
        failing.fetcher.update { $0.failing = true }
        do {
            try await failing.verifier.loadKeys()
            XCTFail("loaded")
        } catch {
            XCTAssertEqual(error.code, .keySetUnavailable, "\(error)")
        }
    }

    func testFiftyConcurrentVerificationsWithANewKidShareOneFetch() async throws {
        let harness = Harness()
        _ = try await harness.verifier.verify(harness.es256.token(harness.claims()))
        let rotatedIn = TestSigningKey(.es256)
        harness.fetcher.update {
            $0.keys.append(rotatedIn.publicKey)
            // Long enough for all fifty to arrive while the fetch runs: one that came after it ended would find
            // the key without waiting, and one that started its own would be refused by the rate bound.
            $0.delay = .milliseconds(300)
        }
        harness.clock.advance(by: .seconds(30))
        let verifier = harness.verifier
        let claims = harness.claims()
        let sessions = try await withThrowingTaskGroup(of: VerifiedSession.self) { group in
            for index in 0..<50 {
                var claims = claims
                claims.sessionID = "ses_\(index)"
                let token = rotatedIn.token(claims)
                group.addTask { try await verifier.verify(token) }
            }
            return try await group.reduce(into: [VerifiedSession]()) { $0.append($1) }
        }
        XCTAssertEqual(Set(sessions.map(\.sessionID)).count, 50)
        XCTAssertEqual(harness.fetcher.requests, 2, "one fetch for all fifty")
    }

    func testOnlyTheFirstSixtyFourKeysAreKept() async throws {
        let keys = (0..<65).map { _ in TestSigningKey(.edDSA) }
        let harness = Harness(algorithms: [.edDSA])
        harness.fetcher.update { $0.keys = keys.map(\.publicKey) }
        _ = try await harness.verifier.verify(keys[63].token(harness.claims()))
        let beyond = await code(of: keys[64].token(harness.claims()), harness.verifier)
        XCTAssertEqual(beyond, .unknownKey)
    }

    func testAKeyOffTheCurveIsSkippedAndTheRestKept() async throws {
        let harness = Harness()
        let good = harness.es256.publicKey
        var y = good.y
        y[31] ^= 0x01
        let offCurve = try XCTUnwrap(JSONWebKey(keyID: "off-curve", algorithm: .es256, x: good.x, y: y))
        harness.fetcher.update { $0.keys = [offCurve, good] }
        let token = harness.es256.token(
            header: harness.header(harness.es256) { $0["kid"] = "off-curve" }, payload: harness.payload())
        let refused = await code(of: token, harness.verifier)
        XCTAssertEqual(refused, .unknownKey)
        _ = try await harness.verifier.verify(harness.es256.token(harness.claims()))
    }

    func testAnUnchangedKeyIsNotParsedAgainOnARefetch() throws {
        let key = TestSigningKey(.es256)
        let body = JSONWebKey.keySet([key.publicKey]).serialized()
        let first = try LoadedKeySet(KeySetResponse(status: 200, body: body), reusing: [:])
        let second = try LoadedKeySet(KeySetResponse(status: 200, body: body), reusing: first.keys)
        XCTAssertTrue(try XCTUnwrap(first.keys[key.keyID]) === second.keys[key.keyID])
    }

    func testTheLifetimeComesFromMaxAgeWithinItsBounds() {
        func lifetime(_ cacheControl: String?, age: String? = nil) -> Duration {
            LoadedKeySet.lifetime(cacheControl: cacheControl, age: age)
        }
        XCTAssertEqual(lifetime(nil), .seconds(300))
        XCTAssertEqual(lifetime("public"), .seconds(300))
        XCTAssertEqual(lifetime("public, max-age=300"), .seconds(300))
        XCTAssertEqual(lifetime("Max-Age=600, public"), .seconds(600))
        XCTAssertEqual(lifetime("max-age=600", age: "100"), .seconds(500))
        XCTAssertEqual(lifetime("max-age=600", age: "9000"), .seconds(30))
        XCTAssertEqual(lifetime("max-age=5"), .seconds(30))
        XCTAssertEqual(lifetime("max-age=0"), .seconds(30))
        XCTAssertEqual(lifetime("no-store"), .seconds(30))
        XCTAssertEqual(lifetime("no-cache, max-age=600"), .seconds(30))
        XCTAssertEqual(lifetime("max-age=31536000"), .seconds(86_400))
        XCTAssertEqual(lifetime("max-age=99999999999999999999999"), .seconds(86_400))
        XCTAssertEqual(lifetime("max-age=-5"), .seconds(300))
        XCTAssertEqual(lifetime("max-age=\"60\""), .seconds(300))
        XCTAssertEqual(lifetime("max-age="), .seconds(300))
    }
}
