import COpenSSL
import Crypto
import XCTest

/// Signature verification against keys generated here and signed through OpenSSL directly.
final class PublicKeyTests: XCTestCase {
    private func generate(_ type: String, configure: (OpaquePointer?) -> Void = { _ in }) throws -> OpaquePointer {
        let context = EVP_PKEY_CTX_new_from_name(nil, type, nil)
        defer { EVP_PKEY_CTX_free(context) }
        XCTAssertEqual(EVP_PKEY_keygen_init(context), 1)
        configure(context)
        var key: OpaquePointer?
        XCTAssertEqual(EVP_PKEY_generate(context, &key), 1)
        return try XCTUnwrap(key)
    }

    private func sign(_ key: OpaquePointer, _ message: [UInt8], digest: DigestAlgorithm?, pss: Bool = false) -> [UInt8]
    {
        let context = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(context) }
        var keyContext: OpaquePointer?
        XCTAssertEqual(EVP_DigestSignInit(context, &keyContext, digest?.handle, nil, key), 1)
        if pss {
            XCTAssertEqual(EVP_PKEY_CTX_set_rsa_padding(keyContext, copenssl_RSA_PKCS1_PSS_PADDING()), 1)
            XCTAssertEqual(EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, copenssl_RSA_PSS_SALTLEN_DIGEST()), 1)
        }
        var length = 0
        XCTAssertEqual(EVP_DigestSign(context, nil, &length, message, message.count), 1)
        var signature = [UInt8](repeating: 0, count: length)
        XCTAssertEqual(EVP_DigestSign(context, &signature, &length, message, message.count), 1)
        return Array(signature.prefix(length))
    }

    func testECDSAOnEveryCurveFromRawCoordinates() throws {
        let cases: [(String, EllipticCurve, HashFunction)] = [
            ("P-256", .p256, .sha256), ("P-384", .p384, .sha384), ("P-521", .p521, .sha512),
        ]
        for (name, curve, hash) in cases {
            let privateKey = try generate("EC") { XCTAssertEqual(EVP_PKEY_CTX_set_group_name($0, name), 1) }
            defer { EVP_PKEY_free(privateKey) }
            var point = [UInt8](repeating: 0, count: 200)
            var length = 0
            XCTAssertEqual(EVP_PKEY_get_octet_string_param(privateKey, "pub", &point, point.count, &length), 1)
            let size = curve.coordinateLength
            let key = try PublicKey.ellipticCurve(
                curve, x: Array(point[1..<1 + size]), y: Array(point[1 + size..<1 + 2 * size]))
            XCTAssertEqual(key.kind, .ellipticCurve(curve))
            let message = Array("message".utf8)
            let signature = sign(privateKey, message, digest: hash.algorithm)
            XCTAssertTrue(key.verify(signature: signature, message: message, scheme: .ecdsa(hash)))
            XCTAssertFalse(key.verify(signature: signature, message: message + [0], scheme: .ecdsa(hash)))
            XCTAssertFalse(key.verify(signature: signature, message: message, scheme: .rsaPKCS1v15(hash)))
            XCTAssertFalse(key.verify(signature: Array(signature.dropLast()), message: message, scheme: .ecdsa(hash)))
            var offCurve = Array(point[1 + size..<1 + 2 * size])
            offCurve[size - 1] ^= 1
            XCTAssertThrowsError(try PublicKey.ellipticCurve(curve, x: Array(point[1..<1 + size]), y: offCurve))
        }
    }

    func testEd25519FromRawBytes() throws {
        let privateKey = try generate("ED25519")
        defer { EVP_PKEY_free(privateKey) }
        var raw = [UInt8](repeating: 0, count: 32)
        var length = 32
        XCTAssertEqual(EVP_PKEY_get_raw_public_key(privateKey, &raw, &length), 1)
        let key = try PublicKey.ed25519(raw)
        let signature = sign(privateKey, [1, 2, 3], digest: nil)
        XCTAssertTrue(key.verify(signature: signature, message: [1, 2, 3], scheme: .ed25519))
        XCTAssertFalse(key.verify(signature: signature, message: [1, 2, 4], scheme: .ed25519))
        XCTAssertThrowsError(try PublicKey.ed25519([1, 2, 3]))
    }

    func testRSAPKCS1AndPSSFromModulusAndExponent() throws {
        let privateKey = try generate("RSA") { XCTAssertEqual(EVP_PKEY_CTX_set_rsa_keygen_bits($0, 2048), 1) }
        defer { EVP_PKEY_free(privateKey) }
        func bignum(_ name: String) -> [UInt8] {
            var number: OpaquePointer?
            XCTAssertEqual(EVP_PKEY_get_bn_param(privateKey, name, &number), 1)
            defer { BN_free(number) }
            var output = [UInt8](repeating: 0, count: (Int(BN_num_bits(number)) + 7) / 8)
            _ = BN_bn2bin(number, &output)
            return output
        }
        let key = try PublicKey.rsa(modulus: bignum("n"), exponent: bignum("e"))
        XCTAssertEqual(key.kind, .rsa(bits: 2048))
        let message = Array("rsa".utf8)
        let pkcs1 = sign(privateKey, message, digest: .sha256)
        XCTAssertTrue(key.verify(signature: pkcs1, message: message, scheme: .rsaPKCS1v15(.sha256)))
        XCTAssertFalse(key.verify(signature: pkcs1, message: message, scheme: .rsaPSS(.sha256)))
        let pss = sign(privateKey, message, digest: .sha384, pss: true)
        XCTAssertTrue(key.verify(signature: pss, message: message, scheme: .rsaPSS(.sha384)))
        XCTAssertFalse(key.verify(signature: pss, message: message, scheme: .rsaPSS(.sha256)))
        let same = try PublicKey.rsa(modulus: bignum("n"), exponent: bignum("e"))
        XCTAssertTrue(key.isSameKey(as: same))
    }

    func testCertificateParsingRejectsGarbageAndTrailingBytes() throws {
        XCTAssertThrowsError(try Certificate(derEncoded: []))
        XCTAssertThrowsError(try Certificate(derEncoded: [0x30, 0x03, 0x02, 0x01, 0x01]))
        XCTAssertThrowsError(
            try Certificate(pemEncoded: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
    }
}
