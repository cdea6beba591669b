import AccessTokens
import Crypto
import Domain
import Encoding
import Foundation
import Synchronization

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
    private static let algorithms = Set(JWSAlgorithm.allCases)

    /// A signer over `ring`.
    public init(ring: SigningKeyRing, settings: AccessTokenSettings) {
        self.ring = ring
        self.settings = settings
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
            tokenID: UUID.randomV4().lowercaseText,
            sessionID: session.id.description,
            authenticatedAt: Int64(session.authenticatedAt.timeIntervalSince1970.rounded(.down)),
            methods: session.methodReferences ?? Self.references(session.authenticationMethod))
        let input = AccessTokenFormat.signingInput(encodedHeader: key.entry.encodedHeader, claims: claims)
        let signature = try key.key.sign(input)
        return (
            AccessTokenFormat.assemble(signingInput: input, signature: signature),
            Date(timeIntervalSince1970: TimeInterval(expiresAt))
        )
    }

    /// The claims of a presented token whose signature, key, issuer, audience and times hold at `now`.
    public func verify(_ token: String, now: Date) throws(AccessTokenError) -> AccessTokenClaims {
        let parsed = try AccessTokenFormat.parse(token, allowing: Self.algorithms)
        guard let key = ring.verifier(keyID: parsed.keyID, at: now), key.stored.publicKey.algorithm == parsed.algorithm
        else { throw AccessTokenError(.unknownKey, "No published key has this kid.") }
        guard key.verifier.verify(jwsSignature: parsed.signature, signingInput: parsed.signingInput) else {
            throw AccessTokenError(.signatureInvalid, "The signature does not verify.")
        }
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
}
