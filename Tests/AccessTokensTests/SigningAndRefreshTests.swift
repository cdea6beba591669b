import AccessTokens
import Crypto
import Domain
import Encoding
import Foundation
import JSON
import SessionIssuance
import XCTest

/// Signing keys, the signer and refresh tokens as pure logic over OpenSSL: no database, an injected clock.
final class SigningAndRefreshTests: XCTestCase {
    let encryption = KeyEncryptionKey(bytes: Array(repeating: 7, count: 32))!
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func session(expiresIn lifetime: TimeInterval = 86_400, method: AuthenticationMethod = .passkey)
        -> AuthenticationSession
    {
        AuthenticationSession(
            id: SessionID.timeOrdered(at: start), accountID: .random(), tokenDigest: Array(repeating: 0, count: 32),
            authenticationMethod: method, createdAt: start, expiresAt: start.addingTimeInterval(lifetime),
            revokedAt: nil)
    }

    func signer(_ keys: [StoredSigningKey], lifetime: TimeInterval = 600) throws -> AccessTokenSigner {
        let ring = SigningKeyRing(
            schedule: SigningKeySchedule(accessTokenLifetime: lifetime, publishDelay: 300), encryption: encryption)
        try ring.load(keys)
        return AccessTokenSigner(
            ring: ring,
            settings: AccessTokenSettings(
                issuer: "https://auth.example.com", audience: "api", clientID: "example.com", lifetime: lifetime,
                algorithm: .es256))
    }

    func testTokensOfBothAlgorithmsVerifyAndAChangedByteDoesNot() async throws {
        for algorithm in JWSAlgorithm.allCases {
            let key = try encryption.newKey(algorithm, now: start, activatingAfter: 0)
            let signer = try signer([key])
            let session = session()
            let (token, expiresAt) = try await signer.sign(session, now: start)
            XCTAssertEqual(expiresAt, start.addingTimeInterval(600))
            let claims = try signer.verify(token, now: start.addingTimeInterval(1))
            XCTAssertEqual(claims.sessionID, session.id.description)
            XCTAssertEqual(claims.subject, session.accountID.description)
            XCTAssertEqual(claims.methods, ["pop", "user"])
            XCTAssertEqual(claims.audience, "api")
            // The kid is the key's RFC 7638 thumbprint.
            XCTAssertEqual(try AccessTokenFormat.parse(token, allowing: [algorithm]).keyID, key.keyID)
            XCTAssertEqual(key.keyID, Base64URL.encode(sha256(key.publicKey.thumbprintInput)))
            // One changed payload byte.
            var bytes = Array(token.utf8)
            let dot = bytes.firstIndex(of: UInt8(ascii: "."))!
            bytes[dot + 5] = bytes[dot + 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            XCTAssertThrowsError(try signer.verify(String(decoding: bytes, as: UTF8.self), now: start)) {
                XCTAssertTrue([.signatureInvalid, .malformed].contains(($0 as? AccessTokenError)?.code))
            }
            XCTAssertThrowsError(try signer.verify(token, now: start.addingTimeInterval(600 + 61))) {
                XCTAssertEqual(($0 as? AccessTokenError)?.code, .expired)
            }
        }
    }

    func testAnAccessTokenNeverOutlivesItsSession() async throws {
        let signer = try signer([encryption.newKey(.es256, now: start, activatingAfter: 0)])
        let (_, expiresAt) = try await signer.sign(session(expiresIn: 120), now: start)
        XCTAssertEqual(expiresAt, start.addingTimeInterval(120))
    }

    func testARotatedKeySignsOnlyAfterItsDelayAndARetiredOneVerifiesUntilItsLastTokenExpired() async throws {
        let old = try encryption.newKey(.es256, now: start, activatingAfter: 0)
        let new = try encryption.newKey(.edDSA, now: start.addingTimeInterval(10), activatingAfter: 300)
        let schedule = SigningKeySchedule(accessTokenLifetime: 600, publishDelay: 300)
        XCTAssertEqual(schedule.signingKey(among: [old, new], at: start.addingTimeInterval(309))?.keyID, old.keyID)
        XCTAssertEqual(schedule.signingKey(among: [old, new], at: start.addingTimeInterval(310))?.keyID, new.keyID)
        XCTAssertFalse(schedule.mayRetire(old.keyID, among: [old, new], at: start.addingTimeInterval(309)))
        XCTAssertTrue(schedule.mayRetire(old.keyID, among: [old, new], at: start.addingTimeInterval(310)))
        XCTAssertTrue(
            schedule.mayRetire(new.keyID, among: [old, new], at: start.addingTimeInterval(310)),
            "a rotation taken back: the older key, still active, signs again")
        XCTAssertFalse(schedule.mayRetire(old.keyID, among: [old], at: start.addingTimeInterval(310)), "the only key")

        let signerBefore = try signer([old, new])
        let (token, _) = try await signerBefore.sign(session(), now: start.addingTimeInterval(100))
        XCTAssertEqual(try AccessTokenFormat.parse(token, allowing: Set(JWSAlgorithm.allCases)).keyID, old.keyID)
        let retiredAt = start.addingTimeInterval(400)
        let retired = StoredSigningKey(
            publicKey: old.publicKey, sealedPrivateKey: old.sealedPrivateKey, createdAt: old.createdAt,
            activatesAt: old.activatesAt, retiredAt: retiredAt)
        let ring = try signer([retired, new])
        XCTAssertNoThrow(
            try ring.verify(token, now: start.addingTimeInterval(650)), "published until its tokens expire")
        XCTAssertEqual(ring.ring.published(at: retiredAt.addingTimeInterval(600 + 60)).map(\.keyID), [new.keyID])
        XCTAssertThrowsError(try ring.verify(token, now: retiredAt.addingTimeInterval(661))) {
            XCTAssertTrue([.unknownKey, .expired].contains(($0 as? AccessTokenError)?.code))
        }
    }

    func testAKeySealedUnderAnotherKeyEncryptionKeyDoesNotOpen() throws {
        let key = try encryption.newKey(.es256, now: start, activatingAfter: 0)
        let other = KeyEncryptionKey(bytes: Array(repeating: 8, count: 32))!
        XCTAssertThrowsError(try other.open(key))
        XCTAssertNoThrow(try encryption.open(key))
        // The private key is not in the stored row in the clear.
        let pkcs8 = try encryption.open(key).pkcs8()
        XCTAssertNil(key.sealedPrivateKey.firstRange(of: pkcs8.suffix(32)))
        // A box moved to another key's row does not open (the key ID is bound in).
        let moved = StoredSigningKey(
            publicKey: JSONWebKey(keyID: "other", algorithm: .es256, x: key.publicKey.x, y: key.publicKey.y)!,
            sealedPrivateKey: key.sealedPrivateKey, createdAt: start, activatesAt: start, retiredAt: nil)
        XCTAssertThrowsError(try encryption.open(moved))
    }

    func testAKeySealedUnderALostKeyEncryptionKeyVerifiesButNeverSigns() async throws {
        let lost = KeyEncryptionKey(bytes: Array(repeating: 9, count: 32))!
        let old = try lost.newKey(.es256, now: start, activatingAfter: 0)
        let oldSigner = AccessTokenSigner(
            ring: SigningKeyRing(
                schedule: SigningKeySchedule(accessTokenLifetime: 600, publishDelay: 300), encryption: lost),
            settings: try signer([]).settings)
        try oldSigner.ring.load([old])
        let (token, _) = try await oldSigner.sign(session(), now: start)

        let ring = SigningKeyRing(
            schedule: SigningKeySchedule(accessTokenLifetime: 600, publishDelay: 300), encryption: encryption)
        XCTAssertEqual(try ring.load([old]), [old.keyID], "reported as unopened")
        XCTAssertFalse(ring.hasUsableKey)
        let replaced = AccessTokenSigner(ring: ring, settings: oldSigner.settings)
        XCTAssertNoThrow(try replaced.verify(token, now: start.addingTimeInterval(1)), "its tokens still verify")
        do {
            _ = try await replaced.sign(session(), now: start)
            XCTFail("a key that does not open must not sign")
        } catch {}
        let fresh = try encryption.newKey(.es256, now: start, activatingAfter: 0)
        XCTAssertEqual(try ring.load([old, fresh]), [old.keyID])
        XCTAssertTrue(ring.hasUsableKey)
        let (next, _) = try await replaced.sign(session(), now: start.addingTimeInterval(1))
        XCTAssertEqual(try AccessTokenFormat.parse(next, allowing: [.es256]).keyID, fresh.keyID)
    }

    func testRefreshTokensParseOnlyInTheirOwnShape() {
        let id = SessionID.timeOrdered(at: start)
        let (token, presented) = RefreshTokens.issue(for: id, generation: 7, random: SecureRandom())
        XCTAssertTrue(token.hasPrefix("prt_"))
        XCTAssertEqual(token.count, 74)
        XCTAssertEqual(RefreshTokens.parse(token), presented)
        XCTAssertEqual(presented.generation, 7)
        XCTAssertEqual(presented.sessionID, id)
        for bad in [
            "", "prt_", String(token.dropFirst()), "xrt_" + token.dropFirst(4), token + "A",
            token.replacingOccurrences(of: "_", with: "="),
        ] {
            XCTAssertNil(RefreshTokens.parse(bad), bad)
        }
        let (next, _) = RefreshTokens.issue(for: id, generation: 8, random: SecureRandom())
        let sealed = try! RefreshTokens.sealSuccessor(next, for: presented)
        XCTAssertEqual(RefreshTokens.openSuccessor(sealed, for: presented), next)
        let (_, stranger) = RefreshTokens.issue(for: id, generation: 7, random: SecureRandom())
        XCTAssertNil(RefreshTokens.openSuccessor(sealed, for: stranger), "only the predecessor's holder opens it")
    }

    func testTheRefreshDecisionOverStoredState() {
        let id = SessionID.timeOrdered(at: start)
        let (_, current) = RefreshTokens.issue(for: id, generation: 3, random: SecureRandom())
        let (_, replaced) = RefreshTokens.issue(for: id, generation: 2, random: SecureRandom())
        let (_, older) = RefreshTokens.issue(for: id, generation: 1, random: SecureRandom())
        var row = session()
        row.id = id
        row.refreshDigest = current.digest
        func state(
            replacedToken: RefreshTokens.Presented?, rotatedAt: Date = Date(timeIntervalSince1970: 1_800_000_100),
            disabled: Bool = false, revoked: Bool = false, refreshedAt: Date? = nil
        ) -> RefreshState {
            var session = row
            if revoked { session.revokedAt = start }
            return RefreshState(
                session: session, generation: 3, refreshedAt: refreshedAt ?? rotatedAt, accountDisabled: disabled,
                displayName: "A",
                replaced: replacedToken.map {
                    ReplacedRefreshToken(
                        generation: $0.generation, digest: $0.digest, rotatedAt: rotatedAt, successorSealed: [])
                })
        }
        let now = Date(timeIntervalSince1970: 1_800_000_105)
        func decide(_ token: RefreshTokens.Presented, _ state: RefreshState?, at time: Date? = nil) -> RefreshDecision {
            RefreshDecision.decide(token, state: state, now: time ?? now, idleTimeout: 3600, reuseWindow: 10)
        }
        XCTAssertEqual(decide(current, state(replacedToken: nil)), .rotate)
        XCTAssertEqual(decide(replaced, state(replacedToken: replaced)), .repeatSuccessor)
        XCTAssertEqual(decide(replaced, state(replacedToken: replaced), at: now.addingTimeInterval(6)), .reuseDetected)
        XCTAssertEqual(decide(older, state(replacedToken: older)), .reuseDetected, "older than the last replaced one")
        XCTAssertEqual(decide(older, state(replacedToken: nil)), .invalid, "no stored digest to prove it ours")
        let (_, forged) = RefreshTokens.issue(for: id, generation: 2, random: SecureRandom())
        XCTAssertEqual(decide(forged, state(replacedToken: replaced)), .invalid, "the right generation, another secret")
        let (_, wrongCurrent) = RefreshTokens.issue(for: id, generation: 3, random: SecureRandom())
        XCTAssertEqual(decide(wrongCurrent, state(replacedToken: nil)), .invalid)
        XCTAssertEqual(decide(current, nil), .invalid)
        XCTAssertEqual(decide(current, state(replacedToken: nil, disabled: true)), .ended)
        XCTAssertEqual(decide(current, state(replacedToken: nil, revoked: true)), .ended)
        XCTAssertEqual(decide(replaced, state(replacedToken: replaced, revoked: true)), .ended)
        XCTAssertEqual(
            decide(current, state(replacedToken: nil, refreshedAt: now.addingTimeInterval(-3600))), .ended, "idle")
        XCTAssertEqual(decide(current, state(replacedToken: nil), at: row.expiresAt), .ended, "past its lifetime")
    }

    func testSessionsGetRefreshTokensOnlyWithASignerAndNeverForRecovery() async throws {
        let key = try encryption.newKey(.es256, now: start, activatingAfter: 0)
        let issuer = SessionIssuer(
            random: SecureRandom(), lifetime: 3600, clock: { [start] in start }, signer: try signer([key]),
            idleTimeout: 600)
        let pending = issuer.newSession(accountID: .random(), method: .password)
        XCTAssertNotNil(pending.session.refreshDigest)
        let issued = try await issuer.issue(pending, displayName: "A")
        XCTAssertEqual(issued.refreshTokenExpiresAt, start.addingTimeInterval(600), "the idle timeout")
        XCTAssertEqual(RefreshTokens.parse(issued.refreshToken ?? "")?.digest, pending.session.refreshDigest)
        XCTAssertTrue(AccessTokenFormat.looksLikeJWT(issued.token))

        let recovery = try await issuer.issue(
            issuer.newSession(accountID: .random(), method: .recovery), displayName: "A")
        XCTAssertNil(recovery.refreshToken)
        XCTAssertNotNil(SessionTokens.parse(recovery.token), "an opaque token")

        let opaque = SessionIssuer(random: SecureRandom(), lifetime: 3600)
        let plain = try await opaque.issue(opaque.newSession(accountID: .random(), method: .passkey), displayName: "A")
        XCTAssertNil(plain.refreshToken)
        XCTAssertNil(plain.session.refreshDigest)
    }
}
