import AccessTokens
import Crypto
import Domain
import Foundation
import Postgres
import PostgresStorage
import PostgresTestSupport
import SessionIssuance
import XCTest

/// Refresh state and signing keys on a real Postgres: the compare-and-set of a rotation, the history a reuse is
/// recognised by, the end a reuse makes (with its audit row), and the keys' life.
final class SessionRefreshRepositoryTests: StorageTestCase {
    var refresh: PostgresSessionRefreshRepository { PostgresSessionRefreshRepository(pool: pool) }

    /// A stored session with refresh tokens at generation 0, and its token.
    func storedRefreshableSession() async throws -> (AuthenticationSession, RefreshTokens.Presented) {
        let account = try await storedPasswordAccount()
        var session = makeSession(for: account)
        let (_, presented) = RefreshTokens.issue(for: session.id, generation: 0, random: SecureRandom())
        session.refreshDigest = presented.digest
        try await storage.sessions.add(session)
        return (session, presented)
    }

    func testASessionRoundTripsItsRefreshColumnsAndRotatesOncePerGeneration() async throws {
        let (session, first) = try await storedRefreshableSession()
        let read = try await refresh.refreshState(sessionID: session.id, generation: 0)
        let state = try XCTUnwrap(read)
        XCTAssertEqual(state.generation, 0)
        XCTAssertEqual(state.session.refreshDigest, first.digest)
        XCTAssertEqual(state.displayName, "Ada")
        XCTAssertFalse(state.accountDisabled)
        XCTAssertNil(state.replaced)

        let (second, nextPresented) = RefreshTokens.issue(for: session.id, generation: 1, random: SecureRandom())
        let sealed = try RefreshTokens.sealSuccessor(second, for: first)
        let now = microsecondDate()
        let won = try await refresh.rotate(
            sessionID: session.id, from: 0, replacedDigest: first.digest, nextDigest: nextPresented.digest,
            successorSealed: sealed, at: now)
        XCTAssertTrue(won)
        let lost = try await refresh.rotate(
            sessionID: session.id, from: 0, replacedDigest: first.digest, nextDigest: randomBytes(32),
            successorSealed: sealed, at: now)
        XCTAssertFalse(lost, "the second rotation of one generation loses")

        let reread = try await refresh.refreshState(sessionID: session.id, generation: 0)
        let after = try XCTUnwrap(reread)
        XCTAssertEqual(after.generation, 1)
        XCTAssertEqual(after.session.refreshDigest, nextPresented.digest)
        XCTAssertEqual(after.replaced?.digest, first.digest)
        XCTAssertEqual(after.replaced.map { RefreshTokens.openSuccessor($0.successorSealed, for: first) }, second)
    }

    func testAReuseEndsTheSessionOnceAndStoresItsAuditEvent() async throws {
        let (session, _) = try await storedRefreshableSession()
        let ended = try await refresh.endForReuse(sessionID: session.id, generation: 0, at: microsecondDate())
        XCTAssertTrue(ended)
        let again = try await refresh.endForReuse(sessionID: session.id, generation: 0, at: microsecondDate())
        XCTAssertFalse(again)
        await assertNotNil(try await storage.sessions.find(id: session.id)?.revokedAt)
        let rows = try await pool.query(
            "SELECT count(*) AS n FROM audit_events WHERE type = 'audit.session.refresh_reused' AND account_id = \(session.accountID.rawValue)"
        )
        XCTAssertEqual(try rows.first?.decode(Int.self, "n"), 1)
        // A session ended so cannot rotate.
        let rotated = try await refresh.rotate(
            sessionID: session.id, from: 0, replacedDigest: randomBytes(32), nextDigest: randomBytes(32),
            successorSealed: randomBytes(40), at: microsecondDate())
        XCTAssertFalse(rotated)
    }

    func testASessionOfOpaqueTokensHasNoRefreshState() async throws {
        let account = try await storedPasswordAccount()
        let session = makeSession(for: account)
        try await storage.sessions.add(session)
        await assertNil(try await refresh.refreshState(sessionID: session.id, generation: 0))
        await assertNil(try await refresh.refreshState(sessionID: SessionID.random(), generation: 0))
    }

    func testSigningKeysAreMadeOnceRetiredOnceAndWithdrawnAfterTheirTokens() async throws {
        let keys = PostgresSigningKeyRepository(pool: pool)
        let encryption = KeyEncryptionKey(bytes: randomBytes(32))!
        let now = microsecondDate()
        let first = try encryption.newKey(.es256, now: now, activatingAfter: 0)
        let other = try encryption.newKey(.edDSA, now: now, activatingAfter: 0)
        let storedFirst = try await keys.add(first, onlyIfNone: true)
        let storedOther = try await keys.add(other, onlyIfNone: true)
        XCTAssertTrue(storedFirst)
        XCTAssertFalse(storedOther, "only the first of racing replicas makes the first key")
        await assertEqual(try await keys.keys(publishedSince: now), [first])
        let rotated = try encryption.newKey(.edDSA, now: now, activatingAfter: 60)
        let storedRotated = try await keys.add(rotated, onlyIfNone: false)
        XCTAssertTrue(storedRotated)
        let refused = try await keys.retire(keyID: first.keyID, at: now, publishedSince: now) { _ in false }
        XCTAssertEqual(refused, .refused, "the rule sees the keys and refuses")
        let retired = try await keys.retire(keyID: first.keyID, at: now, publishedSince: now) { all in
            all.count == 2
        }
        guard case .retired(let key) = retired else { return XCTFail("\(retired)") }
        XCTAssertEqual(key.retiredAt, now)
        let retiredAgain = try await keys.retire(keyID: first.keyID, at: now, publishedSince: now) { _ in true }
        XCTAssertEqual(retiredAgain, .notFound)
        let published = try await keys.keys(publishedSince: now.addingTimeInterval(-1))
        XCTAssertEqual(Set(published.map(\.keyID)), [first.keyID, rotated.keyID])
        XCTAssertEqual(published.first { $0.keyID == first.keyID }?.retiredAt, now)
        let later = try await keys.keys(publishedSince: now.addingTimeInterval(1))
        XCTAssertEqual(later.map(\.keyID), [rotated.keyID], "withdrawn once its publication ended")
        // The stored private key opens with the key-encryption key, and only with it.
        XCTAssertNoThrow(try encryption.open(later[0]))
        XCTAssertThrowsError(try KeyEncryptionKey(bytes: randomBytes(32))!.open(later[0]))
        let audit = try await pool.query(
            "SELECT type FROM audit_events WHERE type LIKE 'audit.signing_key.%' ORDER BY id")
        XCTAssertEqual(
            try audit.map { try $0.decode(String.self, "type") },
            ["audit.signing_key.created", "audit.signing_key.created", "audit.signing_key.retired"])
    }
}
