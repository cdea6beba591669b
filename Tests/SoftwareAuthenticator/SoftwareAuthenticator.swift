import Crypto
import Encoding
import WebAuthn

/// A software authenticator holding one credential. It produces registration and assertion responses with
/// settable flags and counters, for tests and benchmarks that need real signatures.
public struct SoftwareAuthenticator: Sendable {
    /// How the registration is attested.
    public enum Attestation: Sendable {
        /// `none` with an empty statement.
        case none
        /// `packed` self attestation signed by the credential key.
        case packedSelf
        /// `packed` full attestation: signed by `key`, whose certificate path (leaf first, DER) is `x5c`.
        case packed(key: SigningKey, x5c: [[UInt8]])
        /// `tpm` (§8.3): a TPM 2.0 certify structure over the credential key (``TPMStatement``), signed by the
        /// attestation identity key `aik`, whose certificate path is `x5c`.
        case tpm(aik: SigningKey, x5c: [[UInt8]])
    }

    /// The credential key.
    public let key: SigningKey
    /// The credential ID.
    public var credentialID: [UInt8]
    /// The account's user handle returned in assertions.
    public var userHandle: [UInt8]
    /// The model identifier reported at registration.
    public var aaguid: AAGUID
    /// The signature counter; `makeAssertion` increments it first unless it stays at zero.
    public var signCount: UInt32
    /// Whether the counter stays at zero (as synced passkeys do).
    public var keepsZeroCounter: Bool

    /// A new credential for `algorithm`.
    public init(
        algorithm: COSEAlgorithm = .es256, credentialID: [UInt8] = Array(SecureRandom().bytes(count: 32)),
        userHandle: [UInt8] = Array(SecureRandom().bytes(count: 16)),
        aaguid: AAGUID = AAGUID(bytes: Array(repeating: 0xAA, count: 16)), signCount: UInt32 = 0,
        keepsZeroCounter: Bool = false
    ) {
        self.key = SigningKey(algorithm: algorithm)
        self.credentialID = credentialID
        self.userHandle = userHandle
        self.aaguid = aaguid
        self.signCount = signCount
        self.keepsZeroCounter = keepsZeroCounter
    }

    /// clientDataJSON as a browser writes it.
    public static func clientDataJSON(
        type: String, challenge: [UInt8], origin: String, crossOrigin: Bool? = nil, topOrigin: String? = nil
    ) -> [UInt8] {
        var json = "{\"type\":\"\(type)\",\"challenge\":\"\(Base64URL.encode(challenge))\",\"origin\":\"\(origin)\""
        if let crossOrigin { json += ",\"crossOrigin\":\(crossOrigin)" }
        if let topOrigin { json += ",\"topOrigin\":\"\(topOrigin)\"" }
        json += "}"
        return Array(json.utf8)
    }

    /// Authenticator data with the given flags; attested credential data is appended when `flags` has AT.
    public func authenticatorData(
        rpID: String, flags: AuthenticatorData.Flags, signCount: UInt32, extensions: CBORValue? = nil
    ) -> [UInt8] {
        var flags = flags
        if extensions != nil { flags.insert(.extensionData) }
        var bytes = sha256(Array(rpID.utf8))
        bytes.append(flags.rawValue)
        bytes += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: signCount >> $0) }
        if flags.contains(.attestedCredentialData) {
            bytes += aaguid.bytes
            bytes += [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)]
            bytes += credentialID
            bytes += key.coseKey
        }
        if let extensions { bytes += CBOREncoder.encode(extensions) }
        return bytes
    }

    /// An attestation object over `authenticatorData`.
    public func attestationObject(
        authenticatorData: [UInt8], clientDataHash: [UInt8], attestation: Attestation
    ) -> [UInt8] {
        let format: String
        let statement: CBORValue
        switch attestation {
        case .none:
            format = "none"
            statement = .map([])
        case .packedSelf:
            format = "packed"
            statement = .map([
                CBORMapEntry(.text("alg"), CBORValue(key.algorithm.rawValue)),
                CBORMapEntry(.text("sig"), .bytes(key.sign(authenticatorData + clientDataHash))),
            ])
        case .packed(let attestationKey, let x5c):
            format = "packed"
            statement = .map([
                CBORMapEntry(.text("alg"), CBORValue(attestationKey.algorithm.rawValue)),
                CBORMapEntry(.text("sig"), .bytes(attestationKey.sign(authenticatorData + clientDataHash))),
                CBORMapEntry(.text("x5c"), .array(x5c.map { .bytes($0) })),
            ])
        case .tpm(let aik, let x5c):
            format = "tpm"
            let tpm = TPMStatement(credentialKey: key, aikAlgorithm: aik.algorithm)
            let certInfo = tpm.certInfo(signedData: authenticatorData + clientDataHash)
            statement = .map([
                CBORMapEntry(.text("ver"), .text("2.0")),
                CBORMapEntry(.text("alg"), CBORValue(aik.algorithm.rawValue)),
                CBORMapEntry(.text("x5c"), .array(x5c.map { .bytes($0) })),
                CBORMapEntry(.text("sig"), .bytes(aik.sign(certInfo))),
                CBORMapEntry(.text("certInfo"), .bytes(certInfo)),
                CBORMapEntry(.text("pubArea"), .bytes(tpm.publicArea)),
            ])
        }
        return CBOREncoder.encode(
            .map([
                CBORMapEntry(.text("fmt"), .text(format)), CBORMapEntry(.text("attStmt"), statement),
                CBORMapEntry(.text("authData"), .bytes(authenticatorData)),
            ]))
    }

    /// A registration response (navigator.credentials.create()).
    public func makeRegistration(
        challenge: [UInt8], rpID: String, origin: String,
        flags: AuthenticatorData.Flags = [.userPresent, .userVerified, .attestedCredentialData],
        attestation: Attestation = .none, transports: [String] = ["internal"], clientExtensionResultsJSON: String = "{}"
    ) -> RegistrationResponse {
        let clientData = Self.clientDataJSON(type: "webauthn.create", challenge: challenge, origin: origin)
        let authData = authenticatorData(rpID: rpID, flags: flags, signCount: signCount)
        return RegistrationResponse(
            credentialID: credentialID, clientDataJSON: clientData,
            attestationObject: attestationObject(
                authenticatorData: authData, clientDataHash: sha256(clientData), attestation: attestation),
            transports: transports, clientExtensionResultsJSON: Array(clientExtensionResultsJSON.utf8))
    }

    /// An assertion response (navigator.credentials.get()); advances the counter unless it stays at zero.
    public mutating func makeAssertion(
        challenge: [UInt8], rpID: String, origin: String,
        flags: AuthenticatorData.Flags = [.userPresent, .userVerified],
        includeUserHandle: Bool = true
    ) -> AuthenticationResponse {
        if !keepsZeroCounter { signCount += 1 }
        let clientData = Self.clientDataJSON(type: "webauthn.get", challenge: challenge, origin: origin)
        return assertion(
            clientDataJSON: clientData,
            authenticatorData: authenticatorData(rpID: rpID, flags: flags, signCount: signCount),
            includeUserHandle: includeUserHandle)
    }

    /// An assertion over exactly these bytes, signed by the credential key.
    public func assertion(
        clientDataJSON: [UInt8], authenticatorData: [UInt8], includeUserHandle: Bool = true
    ) -> AuthenticationResponse {
        AuthenticationResponse(
            credentialID: credentialID, clientDataJSON: clientDataJSON, authenticatorData: authenticatorData,
            signature: key.sign(authenticatorData + sha256(clientDataJSON)),
            userHandle: includeUserHandle ? userHandle : nil)
    }
}
