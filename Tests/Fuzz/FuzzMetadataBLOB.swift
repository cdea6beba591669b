import Foundation

@testable import WebAuthn

/// libFuzzer entry point: the FIDO metadata BLOB reader. The same bytes go through the whole check (compact JWS,
/// header, x5c, signature; no root is given, so nothing is ever accepted) and, as if their signature had verified,
/// through the payload reader with its limits.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMetadataBLOB(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let now = Date(timeIntervalSince1970: 1_760_000_000)
    _ = try? MetadataBLOB(jws: bytes, roots: [], now: now)
    if let blob = try? MetadataBLOB(verifiedPayload: bytes, now: now) {
        require(blob.entries.count <= MetadataBLOB.maximumEntries, "entries within the limit")
        require(blob.refusedAAGUIDs.values.allSatisfy(MetadataBLOB.refusingStatuses.contains), "only refusing statuses")
    }
    return 0
}
