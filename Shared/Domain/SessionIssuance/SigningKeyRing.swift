import AccessTokens
import Crypto
import Domain
import Foundation
import Synchronization

/// The signing keys one process holds: the stored keys it last loaded, their private halves opened once, and
/// their public halves ready to verify. A loader calls ``load(_:)`` with what the repository holds (at start and
/// then every few seconds); signing and verifying read the latest load without waiting on the database.
public final class SigningKeyRing: Sendable {
    struct Entry: Sendable {
        let stored: StoredSigningKey
        /// Nil for a key sealed under another key-encryption key: it still verifies, but never signs here.
        let signer: PrivateKey?
        let verifier: PublicKey
    }

    /// The rules of the keys' lives.
    public let schedule: SigningKeySchedule
    /// What opens the stored private keys and seals new ones.
    public let encryption: KeyEncryptionKey
    private let entries = Mutex<[String: Entry]>([:])
    private let loaded = Atomic<Bool>(false)

    /// A ring with no keys yet, opening keys with `encryption`.
    public init(schedule: SigningKeySchedule, encryption: KeyEncryptionKey) {
        self.schedule = schedule
        self.encryption = encryption
    }

    /// Replaces the ring's keys with `stored`: keys seen before keep their opened halves, new ones are opened. A key
    /// that does not open with this process's key-encryption key (sealed under an earlier one that was lost or
    /// replaced) keeps verifying the tokens it signed but never signs; its ID is returned so the caller can say so.
    @discardableResult
    public func load(_ stored: [StoredSigningKey]) throws -> [String] {
        let known = entries.withLock { $0 }
        var next: [String: Entry] = [:]
        var unopened: [String] = []
        for key in stored {
            if let entry = known[key.keyID], entry.stored.sealedPrivateKey == key.sealedPrivateKey {
                next[key.keyID] = Entry(stored: key, signer: entry.signer, verifier: entry.verifier)
                if entry.signer == nil { unopened.append(key.keyID) }
            } else {
                let signer = try? encryption.open(key)
                if signer == nil { unopened.append(key.keyID) }
                next[key.keyID] = Entry(stored: key, signer: signer, verifier: try key.publicKey.verifyingKey())
            }
        }
        entries.withLock { $0 = next }
        loaded.store(true, ordering: .releasing)
        return unopened
    }

    /// Whether some unretired key opens here, so that one can sign now or after its delay.
    public var hasUsableKey: Bool {
        entries.withLock { $0.values.contains { $0.signer != nil && $0.stored.retiredAt == nil } }
    }

    /// Whether a load has happened.
    public var isLoaded: Bool { loaded.load(ordering: .acquiring) }

    /// Waits for the first load, at most `timeout`: a process that has just started loads its keys while it
    /// already serves.
    public func waitUntilLoaded(timeout: Duration = .seconds(5)) async {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while !isLoaded, clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The stored keys of the last load.
    public var storedKeys: [StoredSigningKey] {
        entries.withLock { $0.values.map(\.stored) }.sorted { $0.createdAt < $1.createdAt }
    }

    /// The key that signs at `now`, if any: of the keys this process can open.
    func signer(at now: Date) -> (stored: StoredSigningKey, key: PrivateKey)? {
        let all = entries.withLock { $0 }
        let openable = all.values.filter { $0.signer != nil }.map(\.stored)
        guard let chosen = schedule.signingKey(among: openable, at: now), let key = all[chosen.keyID]?.signer else {
            return nil
        }
        return (chosen, key)
    }

    /// The public key `keyID` when it is published at `now`.
    func verifier(keyID: String, at now: Date) -> Entry? {
        guard let entry = entries.withLock({ $0[keyID] }), schedule.isPublished(entry.stored, at: now) else {
            return nil
        }
        return entry
    }

    /// The JWKS's keys at `now`, oldest first.
    public func published(at now: Date) -> [JSONWebKey] {
        storedKeys.filter { schedule.isPublished($0, at: now) }.map(\.publicKey)
    }
}

/// What signed access tokens say and how long they live.
public struct AccessTokenSettings: Sendable {
    /// `iss`.
    public var issuer: String
    /// `aud`.
    public var audience: String
    /// `client_id`.
    public var clientID: String
    /// How long a token lives (`PASSKEY_ACCESS_TOKEN_LIFETIME`).
    public var lifetime: TimeInterval
    /// The algorithm new keys sign with (`PASSKEY_TOKEN_ALGORITHM`).
    public var algorithm: JWSAlgorithm

    /// Settings as configured.
    public init(issuer: String, audience: String, clientID: String, lifetime: TimeInterval, algorithm: JWSAlgorithm) {
        self.issuer = issuer
        self.audience = audience
        self.clientID = clientID
        self.lifetime = lifetime
        self.algorithm = algorithm
    }
}

/// Signs access tokens for sessions and verifies the ones presented back, with the keys of a ring.
public struct AccessTokenSigner: Sendable {
    /// The keys.
    public let ring: SigningKeyRing
    /// What tokens say.
    public let settings: AccessTokenSettings
    let random: any RandomSource

    /// A signer over `ring`.
    public init(ring: SigningKeyRing, settings: AccessTokenSettings, random: any RandomSource = SecureRandom()) {
        self.ring = ring
        self.settings = settings
        self.random = random
    }

    /// A token for `session` issued at `now`, and when it expires: the earlier of `now` plus the lifetime and the
    /// session's own end. Throws `unavailable` when no key signs yet.
    public func sign(_ session: AuthenticationSession, now: Date) async throws -> (token: String, expiresAt: Date) {
        await ring.waitUntilLoaded()
        guard let key = ring.signer(at: now) else {
            throw DomainError(.unavailable, "no signing key is active")
        }
        let issuedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        let expiresAt = min(issuedAt + Int64(settings.lifetime), Int64(session.expiresAt.timeIntervalSince1970))
        let claims = AccessTokenClaims(
            issuer: settings.issuer, subject: session.accountID.description, audience: settings.audience,
            clientID: settings.clientID, expiresAt: expiresAt, issuedAt: issuedAt,
            tokenID: UUID(uuid: Self.uuid(random.bytes(count: 16))).uuidString.lowercased(),
            sessionID: session.id.description,
            authenticatedAt: Int64(session.createdAt.timeIntervalSince1970.rounded(.down)),
            methods: session.methodReferences ?? Self.references(session.authenticationMethod))
        let input = AccessTokenFormat.signingInput(
            claims: claims, algorithm: key.stored.publicKey.algorithm, keyID: key.stored.keyID)
        let signature = try key.key.sign(input)
        return (
            AccessTokenFormat.assemble(signingInput: input, signature: signature),
            Date(timeIntervalSince1970: TimeInterval(expiresAt))
        )
    }

    /// The claims of a presented token whose signature, key, issuer, audience and times hold at `now`.
    public func verify(_ token: String, now: Date) throws(AccessTokenError) -> AccessTokenClaims {
        let parsed = try AccessTokenFormat.parse(token, allowing: Set(JWSAlgorithm.allCases))
        guard let key = ring.verifier(keyID: parsed.keyID, at: now), key.stored.publicKey.algorithm == parsed.algorithm
        else { throw AccessTokenError(.unknownKey, "No published key has this kid.") }
        let signature: [UInt8]?
        let scheme: SignatureScheme
        switch parsed.algorithm {
        case .es256: (signature, scheme) = (PrivateKey.derECDSASignature(raw: parsed.signature), .ecdsa(.sha256))
        case .edDSA: (signature, scheme) = (parsed.signature, .ed25519)
        }
        guard let signature, key.verifier.verify(signature: signature, message: parsed.signingInput, scheme: scheme)
        else { throw AccessTokenError(.signatureInvalid, "The signature does not verify.") }
        try AccessTokenFormat.check(
            parsed.claims,
            expecting: .init(
                issuer: settings.issuer, audience: settings.audience, now: Int64(now.timeIntervalSince1970),
                leeway: Int64(SigningKeySchedule.leeway)))
        return parsed.claims
    }

    /// The `amr` of a session signed in by `method`.
    public static func references(_ method: AuthenticationMethod) -> [String] {
        switch method {
        case .password: return AuthenticationMethodReferences.password
        case .passkey: return AuthenticationMethodReferences.passkey
        case .recovery: return ["otp"]
        }
    }

    private static func uuid(_ b: [UInt8]) -> uuid_t {
        // A version 4 UUID from 16 random bytes.
        (b[0], b[1], b[2], b[3], b[4], b[5], (b[6] & 0x0F) | 0x40, b[7], (b[8] & 0x3F) | 0x80, b[9], b[10], b[11],
         b[12], b[13], b[14], b[15])
    }
}
