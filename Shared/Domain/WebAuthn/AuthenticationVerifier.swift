import Crypto

/// An authentication (assertion) response, all binary members already base64url-decoded.
public struct AuthenticationResponse: Sendable {
    /// The credential ID the client reported (`rawId`).
    public var credentialID: [UInt8]
    /// The exact clientDataJSON bytes.
    public var clientDataJSON: [UInt8]
    /// The exact authenticatorData bytes.
    public var authenticatorData: [UInt8]
    /// The signature.
    public var signature: [UInt8]
    /// The user handle, when the authenticator returned one (null or absent maps to nil).
    public var userHandle: [UInt8]?

    /// Wraps the decoded members of an AuthenticationResponseJSON.
    public init(
        credentialID: [UInt8], clientDataJSON: [UInt8], authenticatorData: [UInt8], signature: [UInt8],
        userHandle: [UInt8]? = nil
    ) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userHandle = userHandle
    }
}

/// The result of a successful assertion: what to write back to the stored credential.
public struct VerifiedAuthentication: Sendable {
    /// The credential that signed.
    public let credentialID: [UInt8]
    /// The new sign count to store.
    public let newSignCount: UInt32
    /// BS now (the credential may have been backed up since registration).
    public let backedUp: Bool
    /// BE in this assertion: the stored value, unless the policy let a changed one through.
    public let backupEligible: Bool
    /// True when BE differs from the stored value and the policy accepted it: store `backupEligible`.
    public let backupEligibilityChanged: Bool
    /// UV in this assertion.
    public let userVerified: Bool
    /// True when the counter did not increase and the policy accepted it: the credential may be cloned.
    public let possiblyCloned: Bool
    /// Authenticator extension outputs (the CBOR map), if any.
    public let authenticatorExtensions: CBORValue?
}

/// Verifies authentication ceremonies (WebAuthn Level 3 §7.2). Immutable and safe to share between tasks.
public struct AuthenticationVerifier: Sendable {
    /// Rules that hold for every authentication.
    public let policy: AuthenticationPolicy

    /// A verifier applying `policy` to every assertion.
    public init(policy: AuthenticationPolicy = AuthenticationPolicy()) {
        self.policy = policy
    }

    /// Runs every step of §7.2. `credential` is what the caller looked up by `response.credentialID`.
    public func verify(
        response: AuthenticationResponse, expectation: AuthenticationExpectation, credential: StoredCredential
    ) throws(WebAuthnError) -> VerifiedAuthentication {
        guard !response.credentialID.isEmpty else {
            throw WebAuthnError(.credentialIDMismatch, "the response names an empty credential ID")
        }
        // Step 5: the credential must be one the challenge allowed, when a list was given.
        if !expectation.allowedCredentialIDs.isEmpty,
            !expectation.allowedCredentialIDs.contains(where: { constantTimeEquals($0, response.credentialID) })
        {
            throw WebAuthnError(.credentialNotAllowed, "credential is not in allowCredentials")
        }
        guard constantTimeEquals(response.credentialID, credential.id) else {
            throw WebAuthnError(.credentialIDMismatch, "response credential ID differs from the stored credential")
        }
        // Step 6: the user handle must name the credential's account; discoverable sign-in requires it.
        if let userHandle = response.userHandle {
            guard constantTimeEquals(userHandle, credential.userHandle) else {
                throw WebAuthnError(.userHandleMismatch, "userHandle is not the credential's account")
            }
        } else if expectation.allowedCredentialIDs.isEmpty {
            throw WebAuthnError(.userHandleMismatch, "userHandle is required for discoverable sign-in")
        }
        // Steps 8-14: client data.
        let clientData = try ClientData(json: response.clientDataJSON)
        try clientData.verify(type: "webauthn.get", challenge: expectation.challenge, origins: expectation.origins)
        let authData = try AuthenticatorData(bytes: response.authenticatorData)
        guard authData.attestedCredentialData == nil else {
            throw WebAuthnError(.malformedAuthenticatorData, "assertion carries attested credential data")
        }
        // Step 15: RP ID.
        try authData.verifyRPID(expectation.relyingPartyID, hash: expectation.relyingPartyIDHash)
        // Step 16: UP is always required.
        guard authData.userPresent else { throw WebAuthnError(.userPresentFlagNotSet, "UP flag is not set") }
        // Step 17: UV per policy.
        if expectation.userVerification == .required, !authData.userVerified {
            throw WebAuthnError(.userVerificationRequired, "UV flag is not set and user verification is required")
        }
        // Step 18: BE compared with the stored value. §6.1.3 says it never changes, but deployed providers change
        // it; the policy says whether that refuses the assertion or is reported for storing. BS without BE was
        // refused when the authenticator data was parsed.
        let backupEligibilityChanged = authData.backupEligible != credential.backupEligible
        if backupEligibilityChanged, policy.backupEligibilityChange == .reject {
            throw WebAuthnError(
                .backupStateInvalid,
                "BE flag is \(authData.backupEligible ? 1 : 0), the stored value \(credential.backupEligible ? 1 : 0)")
        }
        // Steps 20-21: signature over authenticatorData || SHA-256(clientDataJSON).
        let message = response.authenticatorData + sha256(response.clientDataJSON)
        guard credential.publicKey.verify(signature: response.signature, message: message) else {
            throw WebAuthnError(.signatureInvalid, "assertion signature does not verify")
        }
        // Step 22: the signature counter.
        var possiblyCloned = false
        if authData.signCount != 0 || credential.signCount != 0, authData.signCount <= credential.signCount {
            switch policy.signCount {
            case .reject:
                throw WebAuthnError(
                    .signCountRegressed, "sign count \(authData.signCount) is not above stored \(credential.signCount)")
            case .acceptAndFlag:
                possiblyCloned = true
            }
        }
        return VerifiedAuthentication(
            credentialID: credential.id, newSignCount: max(authData.signCount, credential.signCount),
            backedUp: authData.backedUp, backupEligible: authData.backupEligible,
            backupEligibilityChanged: backupEligibilityChanged, userVerified: authData.userVerified,
            possiblyCloned: possiblyCloned,
            authenticatorExtensions: authData.extensions)
    }
}
