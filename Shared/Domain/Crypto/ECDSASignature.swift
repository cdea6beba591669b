import COpenSSL

/// ECDSA signatures on P-256 in their two encodings: JOSE's fixed-width `r ‖ s` (RFC 7518 §3.4, 32 bytes each) and
/// the DER `ECDSA-Sig-Value` OpenSSL reads and writes.
public enum ECDSASignature {
    /// The DER `ECDSA-Sig-Value` of a JWS `r ‖ s` signature (64 bytes), as `PublicKey.verify` takes it; nil when
    /// the length is wrong.
    public static func der(raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64 else { return nil }
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }

    /// `r ‖ s`, each left-padded to 32 bytes, from a DER `ECDSA-Sig-Value`.
    public static func raw(der: [UInt8]) throws(CryptoError) -> [UInt8] {
        var cursor: UnsafePointer<UInt8>? = nil
        let value: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let value else { throw CryptoError("d2i_ECDSA_SIG") }
        defer { ECDSA_SIG_free(value) }
        var output = [UInt8](repeating: 0, count: 64)
        guard BN_bn2binpad(ECDSA_SIG_get0_r(value), &output, 32) == 32 else { throw CryptoError("BN_bn2binpad") }
        let written = output.withUnsafeMutableBufferPointer {
            BN_bn2binpad(ECDSA_SIG_get0_s(value), $0.baseAddress! + 32, 32)
        }
        guard written == 32 else { throw CryptoError("BN_bn2binpad") }
        return output
    }
}
