import Foundation

@testable import WebAuthn

/// libFuzzer entry point: attestation object decoding and every attestation statement verifier on the result.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAttestationObject(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let object = try? AttestationObject(bytes: bytes),
        let attested = object.authenticatorData.attestedCredentialData,
        let key = try? CredentialPublicKey(value: attested.publicKeyValue, encoded: attested.publicKeyBytes)
    else { return 0 }
    let input = AttestationInput(
        authenticatorData: object.authenticatorData, attestedCredential: attested, credentialKey: key,
        clientDataHash: Array(repeating: 0, count: 32), statement: object.statement,
        now: Date(timeIntervalSince1970: 1_700_000_000), policy: RegistrationPolicy())
    _ = try? AttestationVerifier(trust: .platformDefaults).verify(format: object.format, input: input)
    return 0
}
