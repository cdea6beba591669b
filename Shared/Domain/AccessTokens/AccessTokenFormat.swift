import Encoding
import JSON

/// The one definition of the access token's wire form: a compact JWS (RFC 7515) whose header is
/// `{"alg", "typ": "at+jwt", "kid"}` and whose payload is ``AccessTokenClaims``. Issuers build the signing input
/// here and sign it with their key; verifiers parse here, verify the signature over ``ParsedAccessToken/signingInput``
/// and then check the claims with ``AccessTokenFormat/check(_:expecting:)``.
public enum AccessTokenFormat {
    /// The media type of the header's `typ` (RFC 9068 §2.1).
    public static let type = "at+jwt"
    /// The longest token accepted for parsing, in bytes; ours are about 600.
    public static let maximumTokenLength = 4096
    /// The longest `kid` accepted.
    public static let maximumKeyIDLength = 128

    /// The signing input (`base64url(header) "." base64url(payload)`) of a token with these claims, signed by
    /// the key `keyID` with `algorithm`.
    public static func signingInput(claims: AccessTokenClaims, algorithm: JWSAlgorithm, keyID: String) -> [UInt8] {
        signingInput(encodedHeader: encodedHeader(algorithm: algorithm, keyID: keyID), claims: claims)
    }

    /// `base64url(header) "."` for tokens the key `keyID` signs with `algorithm`: the same for every token of that
    /// key, so an issuer makes it once per key.
    public static func encodedHeader(algorithm: JWSAlgorithm, keyID: String) -> [UInt8] {
        let header: JSONValue = [
            "alg": .string(algorithm.rawValue), "typ": .string(type), "kid": .string(keyID),
        ]
        return Array(Base64URL.encode(header.serialized()).utf8) + [UInt8(ascii: ".")]
    }

    /// The signing input of a token with these claims after a header made by ``encodedHeader(algorithm:keyID:)``.
    public static func signingInput(encodedHeader: [UInt8], claims: AccessTokenClaims) -> [UInt8] {
        var payload: [(String, JSONValue)] = [
            ("iss", .string(claims.issuer)), ("sub", .string(claims.subject)), ("aud", .string(claims.audience)),
            ("client_id", .string(claims.clientID)), ("exp", .integer(claims.expiresAt)),
            ("iat", .integer(claims.issuedAt)),
        ]
        if let notBefore = claims.notBefore { payload.append(("nbf", .integer(notBefore))) }
        payload += [
            ("jti", .string(claims.tokenID)), ("sid", .string(claims.sessionID)),
            ("auth_time", .integer(claims.authenticatedAt)), ("amr", .array(claims.methods.map { .string($0) })),
        ]
        return encodedHeader + Array(Base64URL.encode(JSONValue.object(JSONObject(payload)).serialized()).utf8)
    }

    /// The compact token: the signing input, a dot, and the base64url signature.
    public static func assemble(signingInput: [UInt8], signature: [UInt8]) -> String {
        String(decoding: signingInput, as: UTF8.self) + "." + Base64URL.encode(signature)
    }

    /// Whether `token` is shaped like a compact JWS at all (three dot-separated parts), which an opaque session
    /// token or a refresh token never is. Says nothing of its validity.
    public static func looksLikeJWT<S: StringProtocol>(_ token: S) -> Bool {
        token.utf8.count <= maximumTokenLength && token.utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }

    /// Splits and decodes a presented token: its header must name an allowed algorithm, `typ: at+jwt` and a
    /// `kid`; its payload must hold every claim of the profile. The signature is not checked here.
    public static func parse(_ token: String, allowing algorithms: Set<JWSAlgorithm>) throws(AccessTokenError)
        -> ParsedAccessToken
    {
        let bytes = Array(token.utf8)
        guard bytes.count <= maximumTokenLength else {
            throw AccessTokenError(.malformed, "The token is over \(maximumTokenLength) bytes.")
        }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        // An empty signature is left to the algorithm and length checks, so that `alg: none` (whose signature is
        // empty) is refused as the algorithm it names.
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw AccessTokenError(.malformed, "A token has three dot-separated parts.")
        }
        guard let headerBytes = Base64URL.decodeUnpadded(String(decoding: parts[0], as: UTF8.self)),
            let payloadBytes = Base64URL.decodeUnpadded(String(decoding: parts[1], as: UTF8.self)),
            let signature = Base64URL.decodeUnpadded(String(decoding: parts[2], as: UTF8.self))
        else { throw AccessTokenError(.malformed, "A part is not base64url.") }
        guard let header = try? JSONReader.parse(headerBytes).objectValue else {
            throw AccessTokenError(.malformed, "The header is not a JSON object.")
        }
        guard let name = header["alg"]?.stringValue, let algorithm = JWSAlgorithm(rawValue: name),
            algorithms.contains(algorithm)
        else { throw AccessTokenError(.algorithmNotAllowed, "The algorithm is not allowed.") }
        guard let typ = header["typ"]?.stringValue?.lowercased(), typ == type || typ == "application/" + type
        else { throw AccessTokenError(.wrongType, "The token's typ is not at+jwt.") }
        guard let keyID = header["kid"]?.stringValue, !keyID.isEmpty, keyID.utf8.count <= maximumKeyIDLength else {
            throw AccessTokenError(.unknownKey, "The token names no usable kid.")
        }
        // A header that asks for something this profile does not do (an embedded key, a critical extension) is
        // refused rather than ignored.
        for forbidden in ["jwk", "jku", "x5u", "x5c", "crit"] where header[forbidden] != nil {
            throw AccessTokenError(.malformed, "The header member \(forbidden) is not accepted.")
        }
        guard signature.count == algorithm.signatureLength else {
            throw AccessTokenError(.signatureInvalid, "The signature has the wrong length.")
        }
        guard let payload = try? JSONReader.parse(payloadBytes).objectValue else {
            throw AccessTokenError(.malformed, "The payload is not a JSON object.")
        }
        let claims = try Self.claims(payload)
        let signingInput = Array(bytes[..<(parts[0].count + 1 + parts[1].count)])
        return ParsedAccessToken(
            algorithm: algorithm, keyID: keyID, claims: claims, signingInput: signingInput, signature: signature)
    }

    /// What a verifier expects of a token's claims besides its signature.
    public struct Expectations: Sendable {
        /// The one issuer accepted.
        public var issuer: String
        /// The audience that must be among `aud`.
        public var audience: String
        /// The current time, in seconds since the epoch.
        public var now: Int64
        /// How far clocks may disagree, in seconds.
        public var leeway: Int64

        /// Expectations at `now`.
        public init(issuer: String, audience: String, now: Int64, leeway: Int64 = 30) {
            self.issuer = issuer
            self.audience = audience
            self.now = now
            self.leeway = leeway
        }
    }

    /// Checks the claims of a token whose signature verified: issuer, audience, expiry and not-before.
    public static func check(_ claims: AccessTokenClaims, expecting expected: Expectations) throws(AccessTokenError) {
        guard claims.issuer == expected.issuer else {
            throw AccessTokenError(.wrongIssuer, "The issuer is not accepted.")
        }
        guard
            claims.audience == expected.audience
                || claims.audience.split(separator: " ").contains(where: { $0 == expected.audience })
        else {
            throw AccessTokenError(.wrongAudience, "The token is not for this audience.")
        }
        guard expected.now < claims.expiresAt + expected.leeway else {
            throw AccessTokenError(.expired, "The token has expired.")
        }
        if let notBefore = claims.notBefore, notBefore > expected.now + expected.leeway {
            throw AccessTokenError(.notYetValid, "The token is not valid yet.")
        }
        guard claims.issuedAt <= expected.now + expected.leeway else {
            throw AccessTokenError(.notYetValid, "The token was issued in the future.")
        }
    }

    private static func claims(_ payload: JSONObject) throws(AccessTokenError) -> AccessTokenClaims {
        func text(_ name: String) throws(AccessTokenError) -> String {
            guard let value = payload[name]?.stringValue, !value.isEmpty, value.utf8.count <= 512 else {
                throw AccessTokenError(.missingClaim, "The claim \(name) is missing or not a string.")
            }
            return value
        }
        func time(_ name: String) throws(AccessTokenError) -> Int64? {
            guard let value = payload[name] else { return nil }
            guard let number = value.numberValue, number.isFinite, number >= 0, number < 253_402_300_800 else {
                throw AccessTokenError(.missingClaim, "The claim \(name) is not a time.")
            }
            return Int64(number)
        }
        func requiredTime(_ name: String) throws(AccessTokenError) -> Int64 {
            guard let value = try time(name) else {
                throw AccessTokenError(.missingClaim, "The claim \(name) is missing.")
            }
            return value
        }
        // `aud` may be one string or an array of them (RFC 7519 §4.1.3); a token is for us when ours is among them.
        // Several audiences are kept space-separated, so a name with a space in it could pass for two: refused.
        let audience: String
        switch payload["aud"] {
        case .string(let value)? where !value.isEmpty && !value.contains(" "): audience = value
        case .array(let values)? where values.count <= 16:
            let names = values.compactMap(\.stringValue)
            guard names.count == values.count, let first = names.first,
                names.allSatisfy({ !$0.isEmpty && !$0.contains(" ") })
            else {
                throw AccessTokenError(.missingClaim, "The claim aud is not a string or strings without spaces.")
            }
            audience = names.count == 1 ? first : names.joined(separator: " ")
        default: throw AccessTokenError(.missingClaim, "The claim aud is missing or not a string without spaces.")
        }
        var methods: [String] = []
        if let amr = payload["amr"] {
            guard let values = amr.arrayValue, values.count <= 8 else {
                throw AccessTokenError(.missingClaim, "The claim amr is not an array.")
            }
            methods = values.compactMap(\.stringValue)
            guard methods.count == values.count else {
                throw AccessTokenError(.missingClaim, "The claim amr holds something other than strings.")
            }
        }
        return AccessTokenClaims(
            issuer: try text("iss"), subject: try text("sub"), audience: audience, clientID: try text("client_id"),
            expiresAt: try requiredTime("exp"), issuedAt: try requiredTime("iat"), notBefore: try time("nbf"),
            tokenID: try text("jti"), sessionID: try text("sid"), authenticatedAt: try requiredTime("auth_time"),
            methods: methods)
    }
}

/// A token split and decoded, before its signature is checked.
public struct ParsedAccessToken: Sendable {
    /// The header's `alg`, one the caller allows.
    public let algorithm: JWSAlgorithm
    /// The header's `kid`.
    public let keyID: String
    /// The payload's claims.
    public let claims: AccessTokenClaims
    /// The bytes the signature covers.
    public let signingInput: [UInt8]
    /// The signature (`r ‖ s` for ES256, 64 bytes for EdDSA).
    public let signature: [UInt8]
}
