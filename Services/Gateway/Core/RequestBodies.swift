import Domain
import Encoding
import HTTPMessages
import JSON
import ServiceContracts

/// Reads the JSON body of a request into typed fields: every missing, mistyped or undecodable field is a 400
/// `invalid_request` naming the field. Unknown members are ignored, so apps may send more than is read.
public struct JSONBody: Sendable {
    /// The top-level object.
    public let object: JSONObject

    /// Parses `bytes`; an empty body reads as `{}` when `emptyAllowed`.
    public init(bytes: [UInt8], emptyAllowed: Bool = false) throws(APIProblem) {
        if bytes.isEmpty && emptyAllowed {
            object = JSONObject()
            return
        }
        guard let value = try? JSONReader.parse(bytes) else { throw .invalidRequest("The body is not valid JSON.") }
        guard case .object(let object) = value else { throw .invalidRequest("The body must be a JSON object.") }
        self.object = object
    }

    /// Wraps an object already read (a nested one such as `credential`).
    public init(object: JSONObject) { self.object = object }

    /// A required string member.
    public func string(_ key: String, path: String = "") throws(APIProblem) -> String {
        guard let value = try optionalString(key, path: path) else {
            throw .invalidRequest("\(path + key) is required.")
        }
        return value
    }

    /// An optional string member (absent or null reads as nil).
    public func optionalString(_ key: String, path: String = "") throws(APIProblem) -> String? {
        switch object[key] {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw .invalidRequest("\(path + key) must be a string.")
        }
    }

    /// A required base64url member, decoded.
    public func bytes(_ key: String, path: String = "") throws(APIProblem) -> [UInt8] {
        guard let value = try optionalBytes(key, path: path) else {
            throw .invalidRequest("\(path + key) is required.")
        }
        return value
    }

    /// An optional base64url member, decoded.
    public func optionalBytes(_ key: String, path: String = "") throws(APIProblem) -> [UInt8]? {
        guard let text = try optionalString(key, path: path) else { return nil }
        guard let bytes = Base64URL.decode(text) else { throw .invalidRequest("\(path + key) is not base64url.") }
        return bytes
    }

    /// An optional array of strings.
    public func optionalStrings(_ key: String, path: String = "") throws(APIProblem) -> [String]? {
        switch object[key] {
        case nil, .null?: return nil
        case .array(let items)?:
            var strings: [String] = []
            for item in items {
                guard case .string(let text) = item else {
                    throw .invalidRequest("\(path + key) must be an array of strings.")
                }
                strings.append(text)
            }
            return strings
        default: throw .invalidRequest("\(path + key) must be an array of strings.")
        }
    }

    /// An optional nested object.
    public func optionalObject(_ key: String, path: String = "") throws(APIProblem) -> JSONBody? {
        switch object[key] {
        case nil, .null?: return nil
        case .object(let nested)?: return JSONBody(object: nested)
        default: throw .invalidRequest("\(path + key) must be an object.")
        }
    }

    /// An optional boolean.
    public func optionalBool(_ key: String, path: String = "") throws(APIProblem) -> Bool? {
        switch object[key] {
        case nil, .null?: return nil
        case .boolean(let flag)?: return flag
        default: throw .invalidRequest("\(path + key) must be a boolean.")
        }
    }

    /// True when the member is present (null included).
    public func has(_ key: String) -> Bool { object[key] != nil }
}

/// `{email, password, displayName}` for a new password account.
public struct PasswordAccountBody: Sendable, Equatable {
    /// The email address as typed.
    public var email: String
    /// The password; never logged.
    public var password: String
    /// The name shown for the account.
    public var displayName: String

    /// Reads the body.
    public init(_ body: JSONBody) throws(APIProblem) {
        email = try body.string("email")
        password = try body.string("password")
        displayName = try body.string("displayName")
    }
}

/// `{email, password}` for a password sign-in.
public struct PasswordSignInBody: Sendable, Equatable {
    /// The email address as typed.
    public var email: String
    /// The password; never logged.
    public var password: String

    /// Reads the body.
    public init(_ body: JSONBody) throws(APIProblem) {
        email = try body.string("email")
        password = try body.string("password")
    }
}

/// `{mode?}` for starting to add a passkey.
public struct RegistrationStartBody: Sendable, Equatable {
    /// How the app will ask for the passkey.
    public var mode: RegistrationMode

    /// Reads the body; `mode` defaults to modal.
    public init(_ body: JSONBody) throws(APIProblem) {
        guard let text = try body.optionalString("mode") else {
            mode = .modal
            return
        }
        guard let mode = RegistrationMode(rawValue: text) else {
            throw .invalidRequest("mode must be \"modal\" or \"conditional\".")
        }
        self.mode = mode
    }
}

/// `{email?, displayName?}` for starting an account with a passkey.
public struct AccountRegistrationStartBody: Sendable, Equatable {
    /// The email address, when given here.
    public var email: String?
    /// The display name, when given here.
    public var displayName: String?

    /// Reads the body.
    public init(_ body: JSONBody) throws(APIProblem) {
        email = try body.optionalString("email")
        displayName = try body.optionalString("displayName")
    }
}

/// The credential fields of a registration response, in either form: the flat fields of the talk
/// (`credentialID, clientDataJSON, attestationObject, transports?`) or `credential`, a standard
/// RegistrationResponseJSON (`rawId`/`id`, `response.{clientDataJSON, attestationObject, transports}`,
/// `clientExtensionResults.credProps.rk`). Giving both forms at once is refused.
public enum RegistrationCredentialBody {
    /// Flat credential members that may not appear beside `credential`.
    static let flatKeys = ["credentialID", "clientDataJSON", "attestationObject", "transports"]

    /// Reads the credential from `body`.
    public static func read(_ body: JSONBody) throws(APIProblem) -> RegistrationCredential {
        var credential = RegistrationCredential()
        if let standard = try body.optionalObject("credential") {
            try refuseBothForms(body)
            let response = try responseObject(standard)
            credential.credentialID = try credentialID(standard)
            credential.clientDataJSON = try response.bytes("clientDataJSON", path: "credential.response.")
            credential.attestationObject = try response.bytes("attestationObject", path: "credential.response.")
            credential.transports = try response.optionalStrings("transports", path: "credential.response.") ?? []
            // Passed on as sent, once the outputs the verifier reads (credProps.rk) have the right types.
            if let extensions = try standard.optionalObject("clientExtensionResults", path: "credential.") {
                if let credProps = try extensions.optionalObject("credProps", path: "credential.clientExtensionResults.") {
                    _ = try credProps.optionalBool("rk", path: "credential.clientExtensionResults.credProps.")
                }
                credential.clientExtensionResultsJSON = JSONWriter.serialize(.object(extensions.object))
            }
            return credential
        }
        credential.credentialID = try body.bytes("credentialID")
        credential.clientDataJSON = try body.bytes("clientDataJSON")
        credential.attestationObject = try body.bytes("attestationObject")
        credential.transports = try body.optionalStrings("transports") ?? []
        return credential
    }

    static func refuseBothForms(_ body: JSONBody) throws(APIProblem) {
        let flat = flatKeys + AuthenticationCredentialBody.flatKeys
        if let key = flat.first(where: { body.has($0) }) {
            throw .invalidRequest("\(key) may not be given together with credential.")
        }
    }

    /// `credential.type` must be "public-key" when present; `credential.response` is required.
    static func responseObject(_ standard: JSONBody) throws(APIProblem) -> JSONBody {
        if let type = try standard.optionalString("type", path: "credential."), type != "public-key" {
            throw .invalidRequest("credential.type must be \"public-key\".")
        }
        guard let response = try standard.optionalObject("response", path: "credential.") else {
            throw .invalidRequest("credential.response is required.")
        }
        return response
    }

    /// `rawId`, or `id` when `rawId` is absent; both must agree when both are given.
    static func credentialID(_ standard: JSONBody) throws(APIProblem) -> [UInt8] {
        let rawID = try standard.optionalBytes("rawId", path: "credential.")
        let id = try standard.optionalBytes("id", path: "credential.")
        switch (rawID, id) {
        case (nil, nil): throw .invalidRequest("credential.rawId is required.")
        case (let raw?, let id?) where raw != id: throw .invalidRequest("credential.id and credential.rawId differ.")
        default: return rawID ?? id ?? []
        }
    }
}

/// The credential fields of a sign-in response, in either form: flat
/// (`credentialID, clientDataJSON, authenticatorData, signature, userHandle`) or `credential`, a standard
/// AuthenticationResponseJSON. A discoverable sign-in always returns the user handle, so it is required.
public enum AuthenticationCredentialBody {
    static let flatKeys = ["credentialID", "clientDataJSON", "authenticatorData", "signature", "userHandle"]

    /// Reads the credential from `body`.
    public static func read(_ body: JSONBody) throws(APIProblem) -> AuthenticationCredential {
        var credential = AuthenticationCredential()
        if let standard = try body.optionalObject("credential") {
            try RegistrationCredentialBody.refuseBothForms(body)
            let response = try RegistrationCredentialBody.responseObject(standard)
            let path = "credential.response."
            credential.credentialID = try RegistrationCredentialBody.credentialID(standard)
            credential.clientDataJSON = try response.bytes("clientDataJSON", path: path)
            credential.authenticatorData = try response.bytes("authenticatorData", path: path)
            credential.signature = try response.bytes("signature", path: path)
            credential.userHandle = try response.bytes("userHandle", path: path)
            return credential
        }
        credential.credentialID = try body.bytes("credentialID")
        credential.clientDataJSON = try body.bytes("clientDataJSON")
        credential.authenticatorData = try body.bytes("authenticatorData")
        credential.signature = try body.bytes("signature")
        credential.userHandle = try body.bytes("userHandle")
        return credential
    }
}

/// `POST /v1/passkeys/registrations/finish`.
public struct RegistrationFinishBody: Sendable, Equatable {
    /// The challenge ID from the start call.
    public var challengeID: String
    /// The registration response, in the service contract's form.
    public var credential: RegistrationCredential

    /// Reads the body in either form.
    public init(_ body: JSONBody) throws(APIProblem) {
        challengeID = try body.string("challengeID")
        credential = try RegistrationCredentialBody.read(body)
    }
}

/// `POST /v1/passkeys/account-registrations/finish`.
public struct AccountRegistrationFinishBody: Sendable, Equatable {
    /// The registration ID from the start call.
    public var registrationID: String
    /// The email address, when given here.
    public var email: String?
    /// The display name, when given here.
    public var displayName: String?
    /// The registration response, in the service contract's form.
    public var credential: RegistrationCredential

    /// Reads the body in either form.
    public init(_ body: JSONBody) throws(APIProblem) {
        registrationID = try body.string("registrationID")
        email = try body.optionalString("email")
        displayName = try body.optionalString("displayName")
        credential = try RegistrationCredentialBody.read(body)
    }
}

/// `POST /v1/passkeys/authentications/finish`.
public struct AuthenticationFinishBody: Sendable, Equatable {
    /// The challenge ID from the start call.
    public var challengeID: String
    /// The assertion, in the service contract's form.
    public var credential: AuthenticationCredential

    /// Reads the body in either form.
    public init(_ body: JSONBody) throws(APIProblem) {
        challengeID = try body.string("challengeID")
        credential = try AuthenticationCredentialBody.read(body)
    }
}

/// `PATCH /v1/passkeys/{credentialID}`: `{name}`.
public struct RenamePasskeyBody: Sendable, Equatable {
    /// The new name.
    public var name: String

    /// Reads the body.
    public init(_ body: JSONBody) throws(APIProblem) {
        name = try body.string("name")
    }
}

/// Whether a `content-type` value names JSON (`application/json` or any `+json` type, parameters allowed).
public func isJSONContentType(_ value: String?) -> Bool {
    guard let value else { return false }
    // The media type before any parameters, without spaces and tabs, compared case-insensitively as ASCII bytes.
    var mediaType: [UInt8] = []
    for byte in value.utf8 {
        if byte == UInt8(ascii: ";") { break }
        if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") { continue }
        mediaType.append(byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte)
    }
    guard mediaType.starts(with: "application/".utf8) else { return false }
    let subtype = mediaType.dropFirst("application/".utf8.count)
    return subtype.elementsEqual("json".utf8)
        || (subtype.count > "+json".utf8.count && subtype.suffix("+json".utf8.count).elementsEqual("+json".utf8))
}
