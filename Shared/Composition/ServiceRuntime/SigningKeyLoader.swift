import AccessTokens
import Configuration
import Crypto
import Foundation
import Observability
import PostgresStorage
import SessionIssuance

/// Keeps a process's ``SigningKeyRing`` in step with `session_signing_keys`: at start it makes the first key when
/// there is none (one replica wins; the rest load it), then reloads every few seconds, so a key rotated in or
/// retired through the admin API reaches every replica within `interval`.
public struct SigningKeyLoader: Sendable {
    let repository: any SigningKeyRepository
    let ring: SigningKeyRing
    let algorithm: JWSAlgorithm
    let interval: Duration
    let logger: Logger
    let clock: @Sendable () -> Date

    /// A loader of `ring` from `repository`.
    public init(
        repository: any SigningKeyRepository, ring: SigningKeyRing, algorithm: JWSAlgorithm,
        interval: Duration = .seconds(5), logger: Logger, clock: @escaping @Sendable () -> Date = Date.init
    ) {
        self.repository = repository
        self.ring = ring
        self.algorithm = algorithm
        self.interval = interval
        self.logger = logger
        self.clock = clock
    }

    /// The signer of a service that issues sessions, with its loader running in the background; nil for
    /// `PASSKEY_SESSION_TOKENS=opaque`.
    /// `secrets` is the process's key ring (`SecretKeyRing.required(by:)`): its current key seals new signing keys,
    /// and the previous keys of a rotation still open the stored ones.
    public static func signer(
        _ configuration: SessionTokenConfiguration, secrets: SecretKeyRing, keys repository: any SigningKeyRepository,
        context: ServiceContext
    ) throws -> AccessTokenSigner? {
        guard configuration.kind == .jwt else { return nil }
        guard let algorithm = JWSAlgorithm(rawValue: configuration.algorithm) else {
            throw ConfigurationError(variable: "PASSKEY_TOKEN_ALGORITHM", problem: "expected ES256 or EdDSA")
        }
        let encryption = KeyEncryptionKey(ring: secrets)
        let ring = SigningKeyRing(
            schedule: SigningKeySchedule(
                accessTokenLifetime: configuration.accessTokenLifetime, publishDelay: configuration.publishDelay),
            encryption: encryption)
        let loader = SigningKeyLoader(
            repository: repository, ring: ring, algorithm: algorithm, logger: context.logger)
        context.background { await loader.run() }
        return AccessTokenSigner(
            ring: ring,
            settings: AccessTokenSettings(
                issuer: configuration.issuer, audience: configuration.audience, clientID: configuration.clientID,
                lifetime: configuration.accessTokenLifetime, algorithm: algorithm))
    }

    /// Loads at once, then every `interval`, until cancelled. A failed load keeps the keys loaded before.
    public func run() async {
        while !Task.isCancelled {
            do {
                try await load()
            } catch {
                logger.error("signing_keys.load_failed", ["error": String(describing: error)])
            }
            do { try await Task.sleep(for: ring.isLoaded ? interval : .milliseconds(500)) } catch { return }
        }
    }

    /// One load: makes the first key when no unretired key exists, then reads every published key into the ring.
    /// When keys exist but none opens with this process's key-encryption key (it was replaced after a loss), a new
    /// key is made to sign at once: the old keys keep verifying the tokens they signed until they are retired.
    public func load() async throws {
        let now = clock()
        var keys = try await repository.keys(publishedSince: ring.schedule.publishedSince(now))
        if !keys.contains(where: { $0.retiredAt == nil }) {
            let first = try ring.encryption.newKey(algorithm, now: now, activatingAfter: 0)
            if try await repository.add(first, onlyIfNone: true) {
                logger.info("signing_keys.created", ["key.id": first.keyID, "algorithm": algorithm.rawValue])
            }
            keys = try await repository.keys(publishedSince: ring.schedule.publishedSince(now))
        }
        var unopened = try ring.load(keys)
        if !ring.hasUsableKey {
            let replacement = try ring.encryption.newKey(algorithm, now: now, activatingAfter: 0)
            if try await repository.add(replacement, onlyIfNone: false) {
                logger.error(
                    "signing_keys.replaced",
                    [
                        "key.id": replacement.keyID,
                        "detail":
                            "no stored key opens with PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE: a new key signs now; retire the old ones",
                    ])
            }
            unopened = try ring.load(try await repository.keys(publishedSince: ring.schedule.publishedSince(now)))
        }
        if !unopened.isEmpty {
            logger.warning(
                "signing_keys.unopened",
                [
                    "key.ids": unopened.joined(separator: ","),
                    "detail": "sealed under another key-encryption key: they verify but do not sign",
                ])
        }
    }
}
