import AccessTokens
import AdminAccess
import Domain
import Foundation
import SessionIssuance

/// The admin API's signing-key operations: list the keys, rotate a new one in, retire an old one
/// (docs/sessions.md). Rotation publishes the new key at once and lets it sign after the publish delay, so every
/// JWKS cache holds it before its first token; retirement keeps a key published until its last token has expired.
public struct SigningKeyAdministration: Sendable {
    let admin: AdminUseCases
    let repository: any SigningKeyRepository
    let ring: SigningKeyRing
    let algorithm: JWSAlgorithm
    let clock: @Sendable () -> Date

    /// The operations over `repository`, authorized by `admin`.
    public init(
        admin: AdminUseCases, repository: any SigningKeyRepository, ring: SigningKeyRing, algorithm: JWSAlgorithm,
        clock: @escaping @Sendable () -> Date = Date.init
    ) {
        self.admin = admin
        self.repository = repository
        self.ring = ring
        self.algorithm = algorithm
        self.clock = clock
    }

    /// A key with its state at `now`.
    public struct Listed: Sendable {
        public let key: StoredSigningKey
        /// `pending`, `signing`, `published`, `retired` or `withdrawn`.
        public let state: String
    }

    /// Every stored key still published, oldest first (scope read).
    public func list(token: String) async throws -> [Listed] {
        try await admin.authorized(token, .read) {
            let now = clock()
            return describe(try await repository.keys(publishedSince: ring.schedule.publishedSince(now)), at: now)
        }
    }

    /// Makes a new key: published now, signing after the publish delay (scope write).
    public func rotate(token: String) async throws -> Listed {
        try await admin.authorized(token, .write) {
            let now = clock()
            let key = try ring.encryption.newKey(algorithm, now: now, activatingAfter: ring.schedule.publishDelay)
            guard try await repository.add(key, onlyIfNone: false) else {
                throw DomainError(.unavailable, "the new key was not stored")
            }
            return describe([key], at: now)[0]
        }
    }

    /// Retires `keyID` (scope write): `failedPrecondition` when no other key signs yet, `notFound` when there is
    /// no such unretired key.
    public func retire(token: String, keyID: String) async throws -> Listed {
        try await admin.authorized(token, .write) {
            let now = clock()
            let schedule = ring.schedule
            let outcome = try await repository.retire(
                keyID: keyID, at: now, publishedSince: schedule.publishedSince(now),
                allowed: { schedule.mayRetire(keyID, among: $0, at: now) })
            switch outcome {
            case .retired(let key): return describe([key], at: now)[0]
            case .notFound: throw DomainError(.notFound, "no unretired signing key has this ID")
            case .refused:
                throw DomainError(
                    .conflict,
                    "no other key signs yet: rotate a new key in and wait for its publish delay before retiring this one",
                    reason: "only_signing_key")
            }
        }
    }

    func describe(_ keys: [StoredSigningKey], at now: Date) -> [Listed] {
        let signing = ring.schedule.signingKey(among: keys, at: now)?.keyID
        return keys.map { key in
            let state: String
            if key.retiredAt != nil {
                state = ring.schedule.isPublished(key, at: now) ? "retired" : "withdrawn"
            } else if key.keyID == signing {
                state = "signing"
            } else {
                state = key.activatesAt > now ? "pending" : "published"
            }
            return Listed(key: key, state: state)
        }
    }
}
