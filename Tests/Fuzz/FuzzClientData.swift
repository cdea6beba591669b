import Encoding
import WebAuthn

/// libFuzzer entry point: clientDataJSON and clientExtensionResults parsing.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzClientData(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? ClientData(json: bytes)
    _ = try? ClientExtensionOutputs(json: bytes)
    _ = Base64URL.decode(String(decoding: bytes, as: UTF8.self))
    return 0
}
