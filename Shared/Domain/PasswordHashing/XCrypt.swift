import CXCrypt

/// crypt(3) through libxcrypt's `crypt_rn`: reentrant, with a `struct crypt_data` this call owns and wipes.
enum XCrypt {
    /// What crypt computes for `password` with `setting` (a complete stored hash is a valid setting: its
    /// prefix, cost and salt are read from it), or nil when libxcrypt refuses the setting. A password holding a NUL
    /// byte cannot be passed to crypt and never hashes.
    static func hash(_ password: [UInt8], setting: String) -> [UInt8]? {
        guard !password.contains(0) else { return nil }
        let size = MemoryLayout<crypt_data>.size
        let data = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: MemoryLayout<crypt_data>.alignment)
        // crypt_rn wants the structure zeroed before use; wiping it after keeps no intermediate state around.
        data.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        defer {
            data.initializeMemory(as: UInt8.self, repeating: 0, count: size)
            data.deallocate()
        }
        let phrase = password.map { CChar(bitPattern: $0) } + [0]
        guard let output = crypt_rn(phrase, setting, data, Int32(size)) else { return nil }
        let text = Array(String(cString: output).utf8)
        // libxcrypt's failure tokens start with '*'; crypt_rn returns NULL instead, but never trust a token.
        guard text.first != UInt8(ascii: "*") else { return nil }
        return text
    }
}
