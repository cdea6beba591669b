import Foundation

/// base64url without padding (RFC 4648 §5), the encoding of every binary value in the gateway's JSON: challenges,
/// user handles, credential IDs, client data, attestation objects, authenticator data and signatures.
public enum Base64URLCodec {
    /// `data` as base64url without padding.
    public static func encode(_ data: Data) -> String {
        var text = data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// The bytes of a base64url string without padding; throws ``PasskeyClientError/Code/invalidArgument`` for any
    /// other character, for padding, and for a length no encoding has.
    public static func decode(_ text: String) throws -> Data {
        guard let data = decodeIfValid(text) else {
            throw PasskeyClientError(code: .invalidArgument, detail: "The value is not base64url without padding.")
        }
        return data
    }

    /// The bytes of a base64url string without padding, or nil when it is not one.
    public static func decodeIfValid(_ text: String) -> Data? {
        var standard = ""
        standard.reserveCapacity(text.utf8.count + 3)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "A"..."Z", "a"..."z", "0"..."9": standard.unicodeScalars.append(scalar)
            case "-": standard.append("+")
            case "_": standard.append("/")
            default: return nil
            }
        }
        switch standard.utf8.count % 4 {
        case 1: return nil
        case 2: standard += "=="
        case 3: standard += "="
        default: break
        }
        return Data(base64Encoded: standard)
    }
}
