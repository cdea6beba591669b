/// The CBOR attestation object (WebAuthn §6.5.4): `{fmt, attStmt, authData}`.
public struct AttestationObject: Sendable {
    /// The attestation statement format identifier.
    public let format: String
    /// The format-specific statement.
    public let statement: CBORValue
    /// The parsed authenticator data.
    public let authenticatorData: AuthenticatorData

    /// Decodes an attestation object that must fill `bytes` exactly.
    public init(bytes: [UInt8]) throws(WebAuthnError) {
        let value: CBORValue
        do {
            value = try CBORDecoder.decode(bytes)
        } catch {
            throw WebAuthnError(.malformedCBOR, "attestationObject is not one CBOR item: \(error)")
        }
        guard let entries = value.mapEntries, entries.count == 3 else {
            throw WebAuthnError(.malformedCBOR, "attestationObject is not a map of fmt, attStmt and authData")
        }
        guard let format = value[text: "fmt"]?.textString else {
            throw WebAuthnError(.malformedCBOR, "attestationObject fmt is not a text string")
        }
        guard let statement = value[text: "attStmt"] else {
            throw WebAuthnError(.malformedCBOR, "attestationObject has no attStmt")
        }
        guard let authData = value[text: "authData"]?.byteString else {
            throw WebAuthnError(.malformedCBOR, "attestationObject authData is not a byte string")
        }
        self.format = format
        self.statement = statement
        self.authenticatorData = try AuthenticatorData(bytes: authData)
    }
}
