import WebAuthn

/// libFuzzer entry point: COSE key parsing and, when a key is accepted, one verification.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCOSEKey(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let key = try? CredentialPublicKey(coseKey: bytes) {
        _ = key.verify(signature: Array(bytes.prefix(72)), message: bytes)
    }
    return 0
}
