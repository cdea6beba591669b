import Encoding
import JSON

/// A public signing key as a JWK (RFC 7517): `EC` on P-256 for ES256, `OKP` with Ed25519 for EdDSA.
public struct JSONWebKey: Sendable, Equatable {
    /// The key's ID, as tokens name it in `kid`.
    public let keyID: String
    /// The algorithm the key signs with.
    public let algorithm: JWSAlgorithm
    /// For ES256 the point's x coordinate (32 bytes); for EdDSA the raw public key (32 bytes).
    public let x: [UInt8]
    /// For ES256 the point's y coordinate (32 bytes); empty for EdDSA.
    public let y: [UInt8]

    /// A key from its parts; nil when the coordinates do not fit the algorithm.
    public init?(keyID: String, algorithm: JWSAlgorithm, x: [UInt8], y: [UInt8]) {
        switch algorithm {
        case .es256: guard x.count == 32, y.count == 32 else { return nil }
        case .edDSA: guard x.count == 32, y.isEmpty else { return nil }
        }
        guard !keyID.isEmpty, keyID.utf8.count <= AccessTokenFormat.maximumKeyIDLength else { return nil }
        self.keyID = keyID
        self.algorithm = algorithm
        self.x = x
        self.y = y
    }

    /// The members RFC 7638 hashes for the key's thumbprint, in its canonical order and form (no whitespace).
    public var thumbprintInput: [UInt8] {
        switch algorithm {
        case .es256:
            return Array(
                #"{"crv":"P-256","kty":"EC","x":"\#(Base64URL.encode(x))","y":"\#(Base64URL.encode(y))"}"#.utf8)
        case .edDSA:
            return Array(#"{"crv":"Ed25519","kty":"OKP","x":"\#(Base64URL.encode(x))"}"#.utf8)
        }
    }

    /// The key as a JWKS member: `kty`, `crv`, `x` (and `y`), `kid`, `alg` and `use: sig`.
    public var json: JSONValue {
        var members: [(String, JSONValue)]
        switch algorithm {
        case .es256:
            members = [
                ("kty", "EC"), ("crv", "P-256"), ("x", .string(Base64URL.encode(x))),
                ("y", .string(Base64URL.encode(y))),
            ]
        case .edDSA:
            members = [("kty", "OKP"), ("crv", "Ed25519"), ("x", .string(Base64URL.encode(x)))]
        }
        members += [("kid", .string(keyID)), ("alg", .string(algorithm.rawValue)), ("use", "sig")]
        return .object(JSONObject(members))
    }

    /// A key read from a JWKS member; nil for a key of another kind, use or algorithm (a JWKS may hold keys this
    /// profile does not use, which are skipped rather than refused).
    public init?(json: JSONValue) {
        guard let object = json.objectValue, let keyID = object["kid"]?.stringValue else { return nil }
        if let use = object["use"]?.stringValue, use != "sig" { return nil }
        guard let x = object["x"]?.stringValue.flatMap({ Base64URL.decodeUnpadded($0) }) else { return nil }
        switch (object["kty"]?.stringValue, object["crv"]?.stringValue) {
        case ("EC", "P-256"):
            guard object["alg"].map({ $0.stringValue == "ES256" }) ?? true,
                let y = object["y"]?.stringValue.flatMap({ Base64URL.decodeUnpadded($0) })
            else { return nil }
            self.init(keyID: keyID, algorithm: .es256, x: x, y: y)
        case ("OKP", "Ed25519"):
            guard object["alg"].map({ $0.stringValue == "EdDSA" }) ?? true else { return nil }
            self.init(keyID: keyID, algorithm: .edDSA, x: x, y: [])
        default:
            return nil
        }
    }

    /// A JWKS document (`{"keys": [...]}`) of `keys`.
    public static func keySet(_ keys: [JSONWebKey]) -> JSONValue {
        .object(["keys": .array(keys.map(\.json))])
    }

    /// The usable keys of a JWKS document, at most `limit` of them; nil when it is not a JWKS at all.
    public static func keys(inKeySet bytes: [UInt8], limit: Int = 64) -> [JSONWebKey]? {
        guard let document = try? JSONReader.parse(bytes), let keys = document["keys"]?.arrayValue, keys.count <= 1024
        else { return nil }
        return Array(keys.lazy.compactMap(JSONWebKey.init(json:)).prefix(limit))
    }
}
