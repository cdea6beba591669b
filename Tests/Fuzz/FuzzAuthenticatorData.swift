import WebAuthn

/// libFuzzer entry point: authenticator data parsing.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAuthenticatorData(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let parsed = try? AuthenticatorData(bytes: bytes), let attested = parsed.attestedCredentialData {
        _ = try? CredentialPublicKey(coseKey: attested.publicKeyBytes)
    }
    return 0
}
