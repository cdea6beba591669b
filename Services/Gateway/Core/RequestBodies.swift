import Domain
import Encoding
import Foundation
import HTTPMessages
import JSON
import ServiceContracts

/// Reads the JSON body of a request into typed fields: every missing, mistyped, undecodable or ill-shaped field is a
/// 400 `invalid_request` naming the field, before any service is called. Unknown members are ignored, so apps may
/// send more than is read. The shapes are ``FieldRules``', which `openapi.json` writes as formats, patterns and
/// lengths.
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

    /// A required member in UUID text form (``FieldRules/isUUID(_:)``).
    public func uuid(_ key: String, path: String = "") throws(APIProblem) -> String {
        let text = try string(key, path: path)
        guard FieldRules.isUUID(text) else { throw .invalidRequest("\(path + key) must be a UUID.") }
        return text
    }

    /// An optional string member that, unless absent, null or empty, passes `rule`; absent, null and empty read
    /// as nil.
    public func optionalString(
        _ key: String, path: String = "", rule: (String) -> Bool, _ requirement: String
    ) throws(APIProblem) -> String? {
        guard let text = try optionalString(key, path: path), !text.isEmpty else { return nil }
        guard rule(text) else { throw .invalidRequest("\(path + key) \(requirement)") }
        return text
    }

    /// A required string member that passes `rule`.
    public func string(_ key: String, path: String = "", rule: (String) -> Bool, _ requirement: String)
        throws(APIProblem) -> String
    {
        let text = try string(key, path: path)
        guard rule(text) else { throw .invalidRequest("\(path + key) \(requirement)") }
        return text
    }

    /// A required base64url member of a credential ID's length (1 to 1,023 bytes decoded).
    public func credentialID(_ key: String, path: String = "") throws(APIProblem) -> [UInt8] {
        guard let bytes = try optionalCredentialID(key, path: path) else {
            throw .invalidRequest("\(path + key) is required.")
        }
        return bytes
    }

    /// An optional base64url member of a credential ID's length.
    public func optionalCredentialID(_ key: String, path: String = "") throws(APIProblem) -> [UInt8]? {
        guard let bytes = try optionalBytes(key, path: path) else { return nil }
        guard FieldRules.credentialIDLengths.contains(bytes.count) else {
            throw .invalidRequest("\(path + key) must be 1 to \(CredentialID.maximumLength) bytes.")
        }
        return bytes
    }

    /// An optional array of transport names (``FieldRules/isTransport(_:)``).
    public func optionalTransports(_ key: String, path: String = "") throws(APIProblem) -> [String]? {
        guard let names = try optionalStrings(key, path: path) else { return nil }
        guard names.allSatisfy(FieldRules.isTransport) else {
            throw .invalidRequest("\(path + key) may not contain control characters.")
        }
        return names
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
        email = try body.string("email", rule: FieldRules.isEmail, FieldRules.emailRequirement)
        password = try body.string("password", rule: FieldRules.isPassword, FieldRules.passwordRequirement)
        displayName = try body.string(
            "displayName", rule: FieldRules.isDisplayName, FieldRules.displayNameRequirement)
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

    /// Reads the body; an empty string is as good as leaving a member out.
    public init(_ body: JSONBody) throws(APIProblem) {
        email = try body.optionalString("email", rule: FieldRules.isEmail, FieldRules.emailRequirement)
        displayName = try body.optionalString(
            "displayName", rule: FieldRules.isDisplayName, FieldRules.displayNameRequirement)
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
            credential.transports = try response.optionalTransports("transports", path: "credential.response.") ?? []
            // Passed on as sent, once the outputs the verifier reads (credProps.rk) have the right types.
            if let extensions = try standard.optionalObject("clientExtensionResults", path: "credential.") {
                if let credProps = try extensions.optionalObject(
                    "credProps", path: "credential.clientExtensionResults.")
                {
                    _ = try credProps.optionalBool("rk", path: "credential.clientExtensionResults.credProps.")
                }
                credential.clientExtensionResultsJSON = JSONWriter.serialize(.object(extensions.object))
            }
            return credential
        }
        credential.credentialID = try body.credentialID("credentialID")
        credential.clientDataJSON = try body.bytes("clientDataJSON")
        credential.attestationObject = try body.bytes("attestationObject")
        credential.transports = try body.optionalTransports("transports") ?? []
        return credential
    }

    static func refuseBothForms(_ body: JSONBody) throws(APIProblem) {
        let flat = flatKeys + AuthenticationCredentialBody.flatKeys
        if let key = flat.first(where: { body.has($0) }) {
            throw .invalidRequest("\(key) may not be given together with credential.")
        }
    }

    /// `credential.type` must be "public-key" and `credential.authenticatorAttachment` a string when present;
    /// `credential.response` is required.
    static func responseObject(_ standard: JSONBody) throws(APIProblem) -> JSONBody {
        if let type = try standard.optionalString("type", path: "credential."), type != "public-key" {
            throw .invalidRequest("credential.type must be \"public-key\".")
        }
        _ = try standard.optionalString("authenticatorAttachment", path: "credential.")
        guard let response = try standard.optionalObject("response", path: "credential.") else {
            throw .invalidRequest("credential.response is required.")
        }
        return response
    }

    /// `rawId`, or `id` when `rawId` is absent. Each must have a credential ID's shape when given; when both are,
    /// `rawId` is the one used (browsers send both, equal; the verifier checks the ID against the attestation or
    /// the stored credential either way).
    static func credentialID(_ standard: JSONBody) throws(APIProblem) -> [UInt8] {
        let rawID = try standard.optionalCredentialID("rawId", path: "credential.")
        let id = try standard.optionalCredentialID("id", path: "credential.")
        guard let chosen = rawID ?? id else { throw .invalidRequest("credential.rawId is required.") }
        return chosen
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
        credential.credentialID = try body.credentialID("credentialID")
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
        challengeID = try body.uuid("challengeID")
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

    /// Reads the body in either form; an empty email or display name is as good as leaving it out.
    public init(_ body: JSONBody) throws(APIProblem) {
        registrationID = try body.uuid("registrationID")
        email = try body.optionalString("email", rule: FieldRules.isEmail, FieldRules.emailRequirement)
        displayName = try body.optionalString(
            "displayName", rule: FieldRules.isDisplayName, FieldRules.displayNameRequirement)
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
        challengeID = try body.uuid("challengeID")
        credential = try AuthenticationCredentialBody.read(body)
    }
}

/// `PATCH /v1/passkeys/{credentialID}`: `{name}`.
public struct RenamePasskeyBody: Sendable, Equatable {
    /// The new name.
    public var name: String

    /// Reads the body.
    public init(_ body: JSONBody) throws(APIProblem) {
        name = try body.string("name", rule: FieldRules.isDisplayName, FieldRules.displayNameRequirement)
    }
}

/// `PATCH /v1/account`: `{displayName}`.
public struct RenameAccountBody: Sendable, Equatable {
    /// The new display name.
    public var displayName: String

    /// Reads the body.
    public init(_ body: JSONBody) throws(APIProblem) {
        displayName = try body.string(
            "displayName", rule: FieldRules.isDisplayName, FieldRules.displayNameRequirement)
    }
}

/// The shapes of request fields, checked by the gateway before any service sees them and written in `openapi.json`
/// as the same formats, patterns and lengths (a test compares the two). Each is at least as strict as the domain's
/// own rule (`EmailAddress`, `DisplayName`, the password policy), so what passes here is never refused there for its
/// shape. Lengths count Unicode scalars, as JSON Schema's `minLength`/`maxLength` and Postgres's `char_length` do.
public enum FieldRules {
    /// The scalars with Unicode's White_Space property: what the domain trims from names and addresses.
    public static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool { scalar.properties.isWhitespace }

    /// C0 and C1 control characters (general category Cc: U+0000–U+001F, U+007F–U+009F).
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// A UUID in its 36-character text form, hex digits of either case.
    public static func isUUID(_ text: String) -> Bool { text.utf8.count == 36 && UUID(text: text) != nil }

    /// The longest email address, in Unicode scalars, surrounding whitespace included.
    public static let emailMaximumLength = EmailAddress.maximumLength
    static let emailRequirement =
        "must be an email address: one @ with text on each side, no spaces or control characters, at most \(emailMaximumLength) characters."

    /// Domain's rule for an email address (`EmailAddress`): `local@domain`, optionally between whitespace, neither
    /// side empty, no whitespace, control character or second `@` in either, at most ``emailMaximumLength`` scalars.
    public static func isEmail(_ text: String) -> Bool { EmailAddress(text) != nil }

    /// The longest display name or passkey name, in Unicode scalars, surrounding whitespace included.
    public static let displayNameMaximumLength = DisplayName.maximumLength
    static let displayNameRequirement =
        "must be 1 to \(displayNameMaximumLength) characters, not all whitespace, without control characters."

    /// Domain's rule for a name (`DisplayName`): at most ``displayNameMaximumLength`` scalars, no control character,
    /// and at least one that is not whitespace.
    public static func isDisplayName(_ text: String) -> Bool { DisplayName(text) != nil }

    /// The password policy of new accounts (Domain's `PasswordPolicy`, which the use case applies too).
    public static let passwordLengths = PasswordPolicy.lengths
    static let passwordRequirement = PasswordPolicy.requirement + "."

    /// Whether a new account's password has an allowed length.
    public static func isPassword(_ text: String) -> Bool { PasswordPolicy.allows(text) }

    /// A credential ID's decoded length.
    public static let credentialIDLengths = 1...CredentialID.maximumLength

    /// A transport name as reported by the client (`internal`, `hybrid`, …; unknown ones are kept): any text
    /// without control characters.
    public static func isTransport(_ text: String) -> Bool { !text.unicodeScalars.contains(where: isControl) }
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
