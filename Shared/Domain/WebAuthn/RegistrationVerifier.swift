import Crypto
import Foundation

/// A registration response as the client returned it, all binary members already base64url-decoded.
public struct RegistrationResponse: Sendable {
    /// The credential ID the client reported (`rawId`).
    public var credentialID: [UInt8]
    /// The exact clientDataJSON bytes.
    public var clientDataJSON: [UInt8]
    /// The exact attestationObject bytes.
    public var attestationObject: [UInt8]
    /// `response.transports`, as reported.
    public var transports: [String]
    /// The `clientExtensionResults` JSON object bytes (empty when absent).
    public var clientExtensionResultsJSON: [UInt8]

    /// Wraps the decoded members of a RegistrationResponseJSON.
    public init(
        credentialID: [UInt8], clientDataJSON: [UInt8], attestationObject: [UInt8], transports: [String] = [],
        clientExtensionResultsJSON: [UInt8] = []
    ) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
        self.transports = transports
        self.clientExtensionResultsJSON = clientExtensionResultsJSON
    }
}

/// A credential that passed registration, ready to be stored.
public struct VerifiedRegistration: Sendable {
    /// The credential ID.
    public let credentialID: [UInt8]
    /// The COSE_Key bytes of the credential public key.
    public let credentialPublicKey: [UInt8]
    /// The parsed key, for callers that cache it.
    public let publicKey: CredentialPublicKey
    /// The COSE algorithm of the key.
    public let algorithm: Int
    /// The initial sign count.
    public let signCount: UInt32
    /// BE: whether the credential may be backed up (synced passkey).
    public let backupEligible: Bool
    /// BS: whether it is backed up now.
    public let backedUp: Bool
    /// UV at registration.
    public let userVerified: Bool
    /// UP at registration (false only for conditional registration).
    public let userPresent: Bool
    /// The transports the client reported.
    public let transports: [String]
    /// The authenticator model.
    public let aaguid: AAGUID
    /// The attestation statement format.
    public let attestationFormat: AttestationFormat
    /// The attestation type.
    public let attestationType: AttestationType
    /// The trust assessment of the attestation.
    public let attestationTrust: AttestationTrustResult
    /// The attestation outcome in full (certificate path, compound statements).
    public let attestation: AttestationOutcome
    /// Client extension outputs such as credProps.
    public let clientExtensionOutputs: ClientExtensionOutputs
    /// Authenticator extension outputs (the CBOR map), if any.
    public let authenticatorExtensions: CBORValue?
}

/// Verifies registration ceremonies (WebAuthn Level 3 §7.1). Immutable and safe to share between tasks.
public struct RegistrationVerifier: Sendable {
    /// Rules that hold for every registration.
    public let policy: RegistrationPolicy
    /// Which attestations are trusted.
    public let trust: AttestationTrust

    /// A verifier applying `policy` and `trust` to every registration (default: the platform vendors' roots).
    public init(policy: RegistrationPolicy = RegistrationPolicy(), trust: AttestationTrust = .platformDefaults) {
        self.policy = policy
        self.trust = trust
    }

    /// Runs every step of §7.1 on `response`; `now` is the instant used for certificate validity and freshness.
    /// Checks that need the database (credential ID not already registered) are the caller's.
    public func verify(
        response: RegistrationResponse, expectation: RegistrationExpectation, now: Date
    ) throws(WebAuthnError) -> VerifiedRegistration {
        // §7.1 steps 5-12: client data.
        let clientData = try ClientData(json: response.clientDataJSON)
        try clientData.verify(type: "webauthn.create", challenge: expectation.challenge, origins: expectation.origins)
        // Step 13: hash of clientDataJSON.
        let clientDataHash = sha256(response.clientDataJSON)
        // Step 14: decode the attestation object.
        let attestationObject = try AttestationObject(bytes: response.attestationObject)
        let authData = attestationObject.authenticatorData
        // Step 15: RP ID.
        try authData.verifyRPID(expectation.relyingPartyID, hash: expectation.relyingPartyIDHash)
        // Step 16: UP, unless the challenge was issued for conditional mediation.
        if expectation.mediation == .modal, !authData.userPresent {
            throw WebAuthnError(.userPresentFlagNotSet, "UP flag is not set")
        }
        // Step 17: UV when required.
        if expectation.userVerification == .required, !authData.userVerified {
            throw WebAuthnError(.userVerificationRequired, "UV flag is not set and user verification is required")
        }
        // Steps 18-19 (BE/BS consistency) are enforced by AuthenticatorData; attested credential data must be there.
        guard let attested = authData.attestedCredentialData else {
            throw WebAuthnError(.malformedAuthenticatorData, "AT flag is not set: no attested credential data")
        }
        // Step 22 (credential ID length) is enforced while parsing; the client's rawId must be the same ID.
        guard constantTimeEquals(attested.credentialID, response.credentialID) else {
            throw WebAuthnError(.credentialIDMismatch, "rawId differs from the credential ID in authenticator data")
        }
        // Step 20: the key's algorithm must be one offered, and one this verifier implements.
        guard let algorithm = attested.publicKeyValue[int: 3]?.integer else {
            throw WebAuthnError(.malformedCBOR, "credential public key has no integer alg")
        }
        guard expectation.allowedAlgorithms.contains(algorithm) else {
            throw WebAuthnError(.algorithmNotAllowed, "credential algorithm \(algorithm) was not offered")
        }
        let credentialKey = try CredentialPublicKey(value: attested.publicKeyValue, encoded: attested.publicKeyBytes)
        // Step 21: client extension outputs.
        let extensionOutputs = try ClientExtensionOutputs(json: response.clientExtensionResultsJSON)
        // Steps 23-26: attestation statement and trust.
        if trust.deniedAAGUIDs.contains(attested.aaguid) {
            throw WebAuthnError(.attestationUntrusted, "authenticator model \(attested.aaguid) is denied")
        }
        // A model the metadata BLOB reports compromised is refused whatever its attestation says, and also without
        // one (the AAGUID is then only a claim, but a claim to be a compromised model is refused all the same).
        if let status = trust.refusedAAGUIDs[attested.aaguid] {
            throw WebAuthnError(
                .attestationUntrusted, "authenticator model \(attested.aaguid) has metadata status \(status)")
        }
        if let allowed = trust.allowedAAGUIDs, !allowed.contains(attested.aaguid) {
            throw WebAuthnError(.attestationUntrusted, "authenticator model \(attested.aaguid) is not allowed")
        }
        let input = AttestationInput(
            authenticatorData: authData, attestedCredential: attested, credentialKey: credentialKey,
            clientDataHash: clientDataHash, statement: attestationObject.statement, now: now, policy: policy)
        let outcome = try AttestationVerifier(trust: trust).verify(format: attestationObject.format, input: input)
        return VerifiedRegistration(
            credentialID: attested.credentialID, credentialPublicKey: attested.publicKeyBytes,
            publicKey: credentialKey, algorithm: algorithm, signCount: authData.signCount,
            backupEligible: authData.backupEligible, backedUp: authData.backedUp,
            userVerified: authData.userVerified, userPresent: authData.userPresent, transports: response.transports,
            aaguid: attested.aaguid, attestationFormat: outcome.format, attestationType: outcome.type,
            attestationTrust: outcome.trust, attestation: outcome, clientExtensionOutputs: extensionOutputs,
            authenticatorExtensions: authData.extensions)
    }
}
