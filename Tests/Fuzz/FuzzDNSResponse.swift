import NameResolution

/// libFuzzer entry point: the DNS response reader, for both record types, with the ID taken from the input so that
/// the header checks pass as often as they fail.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDNSResponse(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let id = bytes.count >= 2 ? UInt16(bytes[0]) << 8 | UInt16(bytes[1]) : 0
    for type in [DNSMessage.RecordType.a, .aaaa] {
        guard let addresses = try? DNSMessage.addresses(inResponse: bytes, id: id, type: type) else { continue }
        precondition(DNSMessage.isResponse(bytes, to: id), "an accepted message must be a response")
        precondition(addresses.allSatisfy { $0.count == (type == .a ? 4 : 16) })
    }
    return 0
}
