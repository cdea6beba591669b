import Crypto
import Encoding
import JSON

/// The parsed `CollectedClientData` (WebAuthn §5.8.1) from clientDataJSON.
public struct ClientData: Sendable {
    /// "webauthn.create" or "webauthn.get".
    public let type: String
    /// The decoded challenge bytes.
    public let challenge: [UInt8]
    /// The origin the client saw, for example "https://example.com" or "android:apk-key-hash:…".
    public let origin: String
    /// Whether the ceremony ran in a cross-origin iframe (absent means false).
    public let crossOrigin: Bool
    /// The top-level origin when `crossOrigin` is true.
    public let topOrigin: String?
    /// The token binding status, when the client sent a `tokenBinding` object.
    public let tokenBindingStatus: String?

    /// Parses clientDataJSON: UTF-8 (a BOM is stripped), a JSON object with string `type`, `challenge` (base64url)
    /// and `origin`, optional boolean `crossOrigin`, optional string `topOrigin`. Unknown members are ignored.
    public init(json bytes: [UInt8]) throws(WebAuthnError) {
        var members: [JSONValue?] = [nil, nil, nil, nil, nil, nil]
        do {
            try JSONReader.parseObject(bytes) { key, reader throws(JSONReader.Failure) in
                let value = try reader.readValue()
                switch key {
                case "type": members[0] = value
                case "challenge": members[1] = value
                case "origin": members[2] = value
                case "crossOrigin": members[3] = value
                case "topOrigin": members[4] = value
                case "tokenBinding": members[5] = value
                default: break
                }
            }
        } catch {
            throw WebAuthnError(
                .malformedClientData, "clientDataJSON is not a UTF-8 JSON object (offset \(error.offset))")
        }
        guard let type = members[0]?.stringValue else {
            throw WebAuthnError(.malformedClientData, "clientDataJSON has no string type")
        }
        guard let challengeText = members[1]?.stringValue else {
            throw WebAuthnError(.malformedClientData, "clientDataJSON has no string challenge")
        }
        // §7.1 step 8, §7.2 step 11: the challenge is exactly the unpadded base64url of the issued bytes, so a
        // padded or standard-alphabet spelling of the same bytes is refused.
        guard let challenge = Base64URL.decodeUnpadded(challengeText) else {
            throw WebAuthnError(.challengeMismatch, "clientDataJSON challenge is not unpadded base64url")
        }
        guard let origin = members[2]?.stringValue else {
            throw WebAuthnError(.malformedClientData, "clientDataJSON has no string origin")
        }
        var crossOrigin = false
        if let value = members[3], value != .null {
            guard let flag = value.boolValue else {
                throw WebAuthnError(.malformedClientData, "clientDataJSON crossOrigin is not a boolean")
            }
            crossOrigin = flag
        }
        var topOrigin: String?
        if let value = members[4], value != .null {
            guard let text = value.stringValue else {
                throw WebAuthnError(.malformedClientData, "clientDataJSON topOrigin is not a string")
            }
            topOrigin = text
        }
        // Only an object is a token binding; some old clients sent a bare string, which carries no status.
        var tokenBindingStatus: String?
        if let binding = members[5], case .object = binding {
            guard let status = binding["status"]?.stringValue else {
                throw WebAuthnError(.malformedClientData, "clientDataJSON tokenBinding has no string status")
            }
            tokenBindingStatus = status
        }
        self.type = type
        self.challenge = challenge
        self.origin = origin
        self.crossOrigin = crossOrigin
        self.topOrigin = topOrigin
        self.tokenBindingStatus = tokenBindingStatus
    }

    /// Checks type, challenge, origin, cross-origin use and token binding against what the relying party expects.
    func verify(
        type expectedType: String, challenge expectedChallenge: [UInt8], origins: OriginPolicy
    ) throws(WebAuthnError) {
        guard type == expectedType else {
            throw WebAuthnError(.typeMismatch, "clientData type is \"\(type)\", expected \"\(expectedType)\"")
        }
        guard constantTimeEquals(challenge, expectedChallenge) else {
            throw WebAuthnError(.challengeMismatch, "clientData challenge differs from the issued challenge")
        }
        guard origins.allowedOrigins.contains(origin) else {
            throw WebAuthnError(.originMismatch, "origin \"\(origin)\" is not an allowed origin")
        }
        // §7.1 step 11, §7.2 step 14: a topOrigin member means an embedded ceremony even when it equals origin.
        if crossOrigin || topOrigin != nil {
            guard origins.allowCrossOrigin else {
                throw WebAuthnError(.crossOriginNotAllowed, "ceremony ran in a cross-origin frame")
            }
            if let allowedTop = origins.allowedTopOrigins {
                guard let topOrigin, allowedTop.contains(topOrigin) else {
                    throw WebAuthnError(.crossOriginNotAllowed, "topOrigin is not an allowed top-level origin")
                }
            }
        }
        if let status = tokenBindingStatus, status != "present", status != "supported" {
            throw WebAuthnError(.tokenBindingInvalid, "tokenBinding status \"\(status)\" is not present or supported")
        }
    }
}
