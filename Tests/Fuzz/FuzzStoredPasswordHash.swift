import PasswordHashing

/// libFuzzer entry point: the stored password hash parser (what passkey-import reads from its input and sign-in
/// from the table). It never traps, and a hash it accepts reads back the same from its own stored text.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStoredPasswordHash(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let hash = try? StoredPasswordHash(parsing: text) else { return 0 }
    guard let again = try? StoredPasswordHash(parsing: hash.encoded), again == hash else {
        fatalError("an accepted hash does not read back the same")
    }
    return 0
}
