import COpenSSL

/// Authenticated encryption with AES-256-GCM: what protects data at rest under a key the database never holds
/// (signing keys under the key-encryption key, a refresh token's successor under its predecessor).
///
/// A sealed box is `nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes)`; the nonce is random per seal. Additional
/// data binds the box to its context (a key ID, a session), so a box moved to another row does not open.
public enum SealedBox {
    /// The key length in bytes.
    public static let keyLength = 32
    static let nonceLength = 12
    static let tagLength = 16

    /// `plaintext` sealed under `key` (32 bytes), bound to `additionalData`.
    public static func seal(
        _ plaintext: [UInt8], key: [UInt8], additionalData: [UInt8] = [], random: any RandomSource = SecureRandom()
    ) throws(CryptoError) -> [UInt8] {
        guard key.count == keyLength else { throw CryptoError(operation: "SealedBox.seal", details: "key length") }
        let nonce = random.bytes(count: nonceLength)
        guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(context) }
        guard EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1 else {
            throw CryptoError("EVP_EncryptInit_ex")
        }
        var length: Int32 = 0
        if !additionalData.isEmpty {
            guard EVP_EncryptUpdate(context, nil, &length, additionalData, Int32(additionalData.count)) == 1 else {
                throw CryptoError("EVP_EncryptUpdate")
            }
        }
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        guard EVP_EncryptUpdate(context, &ciphertext, &length, plaintext, Int32(plaintext.count)) == 1 else {
            throw CryptoError("EVP_EncryptUpdate")
        }
        var total = Int(length)
        let finished = ciphertext.withUnsafeMutableBufferPointer { buffer in
            EVP_EncryptFinal_ex(context, buffer.baseAddress! + total, &length)
        }
        guard finished == 1 else { throw CryptoError("EVP_EncryptFinal_ex") }
        total += Int(length)
        var tag = [UInt8](repeating: 0, count: tagLength)
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), &tag) == 1 else {
            throw CryptoError("EVP_CTRL_GCM_GET_TAG")
        }
        return nonce + ciphertext[..<total] + tag
    }

    /// The plaintext of `box`, or nil when it was not sealed under `key` with `additionalData` or was changed.
    public static func open(_ box: [UInt8], key: [UInt8], additionalData: [UInt8] = []) -> [UInt8]? {
        guard key.count == keyLength, box.count >= nonceLength + tagLength, box.count <= 1 << 20 else { return nil }
        let nonce = Array(box[..<nonceLength])
        let ciphertext = Array(box[nonceLength..<(box.count - tagLength)])
        var tag = Array(box[(box.count - tagLength)...])
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        var length: Int32 = 0
        guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1 else { return nil }
        if !additionalData.isEmpty {
            guard EVP_DecryptUpdate(context, nil, &length, additionalData, Int32(additionalData.count)) == 1 else {
                return nil
            }
        }
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        guard EVP_DecryptUpdate(context, &plaintext, &length, ciphertext, Int32(ciphertext.count)) == 1,
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag) == 1
        else {
            _ = CryptoError.drainErrorQueue()
            return nil
        }
        var total = Int(length)
        let finished = plaintext.withUnsafeMutableBufferPointer { buffer in
            EVP_DecryptFinal_ex(context, buffer.baseAddress! + total, &length)
        }
        guard finished == 1 else {
            _ = CryptoError.drainErrorQueue()
            return nil
        }
        total += Int(length)
        return Array(plaintext[..<total])
    }
}
