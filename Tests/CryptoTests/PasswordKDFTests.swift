import Crypto
import XCTest

/// RFC 7914 §11 (scrypt) and RFC 6070-style PBKDF2-HMAC-SHA256 / SHA512 known answers.
final class PasswordKDFTests: XCTestCase {
    func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    func testPBKDF2KnownAnswers() throws {
        let sha256 = try PasswordKDF.pbkdf2(
            password: Array("password".utf8), salt: Array("salt".utf8), iterations: 1, digest: .sha256, length: 32)
        XCTAssertEqual(hex(sha256), "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b")
        let sha256Many = try PasswordKDF.pbkdf2(
            password: Array("password".utf8), salt: Array("salt".utf8), iterations: 4096, digest: .sha256, length: 32)
        XCTAssertEqual(hex(sha256Many), "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a")
        let sha512 = try PasswordKDF.pbkdf2(
            password: Array("password".utf8), salt: Array("salt".utf8), iterations: 1, digest: .sha512, length: 64)
        XCTAssertEqual(
            hex(sha512),
            "867f70cf1ade02cff3752599a3a53dc4af34c7a669815ae5d513554e1c8cf252c02d470a285a0501bad999bfe943c08f050235d7d68b1da55e63f73b60a57fce"
        )
    }

    func testScryptKnownAnswers() throws {
        let empty = try PasswordKDF.scrypt(
            password: [], salt: [], n: 16, r: 1, p: 1, length: 64, maximumMemory: 1 << 20)
        XCTAssertEqual(
            hex(empty),
            "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906"
        )
        let password = try PasswordKDF.scrypt(
            password: Array("password".utf8), salt: Array("NaCl".utf8), n: 1024, r: 8, p: 16, length: 64,
            maximumMemory: 64 << 20)
        XCTAssertEqual(
            hex(password),
            "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"
        )
    }

    func testScryptRefusesMoreMemoryThanAllowedAndBadCosts() {
        XCTAssertThrowsError(
            try PasswordKDF.scrypt(
                password: [1], salt: [1], n: 1 << 16, r: 8, p: 1, length: 32, maximumMemory: 1 << 20))
        XCTAssertThrowsError(
            try PasswordKDF.scrypt(password: [1], salt: [1], n: 1000, r: 8, p: 1, length: 32, maximumMemory: 1 << 30))
    }

    func testPBKDF2RefusesNonsenseParameters() {
        XCTAssertThrowsError(
            try PasswordKDF.pbkdf2(password: [1], salt: [1], iterations: 0, digest: .sha256, length: 32))
        XCTAssertThrowsError(
            try PasswordKDF.pbkdf2(password: [1], salt: [1], iterations: 1, digest: .sha256, length: 0))
    }
}
