import WebAuthn

/// libFuzzer entry point: the CBOR decoder, then a re-encode/decode round trip of whatever it accepted.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCBOR(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let (value, consumed) = try? CBORDecoder.decodePrefix(bytes) else { return 0 }
    precondition(consumed > 0 && consumed <= bytes.count)
    let again = try? CBORDecoder.decode(CBOREncoder.encode(value))
    precondition(again != nil, "re-encoded value must decode")
    return 0
}
