import Foundation

// What passes between the start responses, the platform's credential APIs and the finish operations, free of any
// platform type: AuthenticationServices on Apple platforms fills them (see the AuthenticationServices folder), and
// the Linux tests fill them from a software authenticator.

/// What a registration request for an existing account needs (`ASAuthorizationPlatformPublicKeyCredentialProvider`'s
/// `createCredentialRegistrationRequest(challenge:name:userID:)`).
public struct PasskeyRegistrationOptions: Sendable, Equatable {
    /// The RP ID: the platform checks it against the app's associated domains.
    public var relyingPartyID: String
    /// The challenge.
    public var challenge: Data
    /// The account's user handle.
    public var userID: Data
    /// The user name the credential manager shows.
    public var userName: String
    /// The display name.
    public var displayName: String
    /// Modal, or conditional (Automatic Passkey Upgrade).
    public var mode: RegistrationMode
    /// The account's passkeys, not to be registered again.
    public var excludedCredentialIDs: [Data]
    /// `preferred`, `required` or `discouraged`.
    public var userVerification: String

    /// Creates options.
    public init(
        relyingPartyID: String, challenge: Data, userID: Data, userName: String, displayName: String,
        mode: RegistrationMode = .modal, excludedCredentialIDs: [Data] = [], userVerification: String = "preferred"
    ) {
        self.relyingPartyID = relyingPartyID
        self.challenge = challenge
        self.userID = userID
        self.userName = userName
        self.displayName = displayName
        self.mode = mode
        self.excludedCredentialIDs = excludedCredentialIDs
        self.userVerification = userVerification
    }
}

/// What a request creating a new account with a passkey needs: the form's registration request, or the account
/// creation sheet of iOS 26 (`ASAuthorizationAccountCreationProvider`).
public struct PasskeyAccountCreationOptions: Sendable, Equatable {
    /// The RP ID.
    public var relyingPartyID: String
    /// The challenge.
    public var challenge: Data
    /// The new account's user handle.
    public var userID: Data
    /// The user name, when the email was given at start.
    public var userName: String?
    /// The display name, when given at start.
    public var displayName: String?

    /// Creates options, in the talk's shape.
    public init(relyingPartyID: String, challenge: Data, userID: Data) {
        self.relyingPartyID = relyingPartyID
        self.challenge = challenge
        self.userID = userID
    }
}

/// What a discoverable assertion request needs (`createCredentialAssertionRequest(challenge:)`).
public struct PasskeyAuthenticationOptions: Sendable, Equatable {
    /// The RP ID.
    public var relyingPartyID: String
    /// The challenge.
    public var challenge: Data
    /// `preferred`, `required` or `discouraged`.
    public var userVerification: String

    /// Creates options, in the talk's shape.
    public init(relyingPartyID: String, challenge: Data) {
        self.relyingPartyID = relyingPartyID
        self.challenge = challenge
        userVerification = "preferred"
    }
}

/// A new passkey as the platform returned it: what a registration finish sends. `clientDataJSON` must be the
/// platform's bytes, never rebuilt.
public struct PasskeyRegistrationCredential: Sendable, Equatable {
    /// The credential ID.
    public var credentialID: Data
    /// The client data, as the platform serialized it.
    public var clientDataJSON: Data
    /// The attestation object.
    public var attestationObject: Data
    /// Transport hints (`internal`, `hybrid`), when known.
    public var transports: [String]?
    /// `platform` or `cross-platform`, when known (sent in the WebAuthn JSON form).
    public var authenticatorAttachment: String?
    /// The `credProps` extension's `rk`, when known (sent in the WebAuthn JSON form).
    public var isDiscoverable: Bool?

    /// Creates a credential.
    public init(
        credentialID: Data, clientDataJSON: Data, attestationObject: Data, transports: [String]? = nil,
        authenticatorAttachment: String? = nil, isDiscoverable: Bool? = nil
    ) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
        self.transports = transports
        self.authenticatorAttachment = authenticatorAttachment
        self.isDiscoverable = isDiscoverable
    }
}

/// A passkey's signature over a challenge, as the platform returned it: what a sign-in finish sends.
public struct PasskeyAssertion: Sendable, Equatable {
    /// The credential ID.
    public var credentialID: Data
    /// The client data, as the platform serialized it.
    public var clientDataJSON: Data
    /// The authenticator data.
    public var authenticatorData: Data
    /// The signature.
    public var signature: Data
    /// The user handle the passkey was registered with; a discoverable sign-in always has one (the gateway refuses
    /// a finish without it).
    public var userHandle: Data?
    /// `platform` or `cross-platform`, when known (sent in the WebAuthn JSON form).
    public var authenticatorAttachment: String?

    /// Creates an assertion.
    public init(
        credentialID: Data, clientDataJSON: Data, authenticatorData: Data, signature: Data, userHandle: Data?,
        authenticatorAttachment: String? = nil
    ) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userHandle = userHandle
        self.authenticatorAttachment = authenticatorAttachment
    }
}

/// What the account creation sheet returned: the contact and name the user chose, and the new passkey.
public struct PasskeyAccountCreationResult: Sendable, Equatable {
    /// The email address chosen.
    public var emailAddress: String?
    /// The display name made from the name chosen.
    public var displayName: String?
    /// The new passkey.
    public var credential: PasskeyRegistrationCredential

    /// Creates a result.
    public init(emailAddress: String?, displayName: String?, credential: PasskeyRegistrationCredential) {
        self.emailAddress = emailAddress
        self.displayName = displayName
        self.credential = credential
    }
}

/// How a finish body carries the credential; the gateway takes both.
public enum CredentialEncoding: Sendable, Equatable {
    /// Flat members (`credentialID`, `clientDataJSON`, ...), as the talk's iOS code sends them.
    case flat
    /// `credential`: a RegistrationResponseJSON or AuthenticationResponseJSON, as `PublicKeyCredential.toJSON()`
    /// writes it in browsers and Android's Credential Manager returns it.
    case webAuthnJSON
}

/// The body of a finish: its identifiers and the credential in either encoding.
struct FinishBody: Encodable, Sendable {
    enum Credential: Sendable {
        case registration(PasskeyRegistrationCredential)
        case assertion(PasskeyAssertion)
    }

    /// `challengeID` or `registrationID`, and `email` and `displayName` when given.
    var fields: [(name: String, value: String)]
    var credential: Credential
    var encoding: CredentialEncoding

    struct Key: CodingKey {
        let stringValue: String
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for field in fields { try container.encode(field.value, forKey: Key(field.name)) }
        switch encoding {
        case .flat:
            try encodeMembers(into: &container, flat: true)
        case .webAuthnJSON:
            var standard = container.nestedContainer(keyedBy: Key.self, forKey: Key("credential"))
            let id: Data
            let attachment: String?
            switch credential {
            case .registration(let registration):
                (id, attachment) = (registration.credentialID, registration.authenticatorAttachment)
            case .assertion(let assertion):
                (id, attachment) = (assertion.credentialID, assertion.authenticatorAttachment)
            }
            try standard.encode(Base64URLCodec.encode(id), forKey: Key("id"))
            try standard.encode(id, forKey: Key("rawId"))
            try standard.encode("public-key", forKey: Key("type"))
            try standard.encodeIfPresent(attachment, forKey: Key("authenticatorAttachment"))
            var response = standard.nestedContainer(keyedBy: Key.self, forKey: Key("response"))
            try encodeMembers(into: &response, flat: false)
            var extensions = standard.nestedContainer(keyedBy: Key.self, forKey: Key("clientExtensionResults"))
            if case .registration(let registration) = credential, let discoverable = registration.isDiscoverable {
                var credProps = extensions.nestedContainer(keyedBy: Key.self, forKey: Key("credProps"))
                try credProps.encode(discoverable, forKey: Key("rk"))
            }
        }
    }

    /// The credential's members: beside the identifiers when flat (with `credentialID`), inside `response` otherwise.
    private func encodeMembers(into container: inout KeyedEncodingContainer<Key>, flat: Bool) throws {
        switch credential {
        case .registration(let registration):
            if flat { try container.encode(registration.credentialID, forKey: Key("credentialID")) }
            try container.encode(registration.clientDataJSON, forKey: Key("clientDataJSON"))
            try container.encode(registration.attestationObject, forKey: Key("attestationObject"))
            try container.encodeIfPresent(registration.transports, forKey: Key("transports"))
        case .assertion(let assertion):
            if flat { try container.encode(assertion.credentialID, forKey: Key("credentialID")) }
            try container.encode(assertion.clientDataJSON, forKey: Key("clientDataJSON"))
            try container.encode(assertion.authenticatorData, forKey: Key("authenticatorData"))
            try container.encode(assertion.signature, forKey: Key("signature"))
            try container.encodeIfPresent(assertion.userHandle, forKey: Key("userHandle"))
        }
    }
}
