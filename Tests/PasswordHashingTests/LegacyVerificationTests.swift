import PasswordHashing
import XCTest

/// Verification of hashes other systems wrote (passlib 1.7, bcrypt 4, argon2-cffi 23, Django 5, Werkzeug 3, each
/// of "correct horse"). The live suite Tests/LegacyPasswords makes fresh ones at test time; these stay put so a
/// unit run covers every branch without Python.
final class LegacyVerificationTests: XCTestCase {
    let hasher = PasswordHasher(parameters: .init(memoryKiB: 256, iterations: 1, parallelism: 1))

    static let vectors = [
        "$2b$04$5uNMsxnFvuX4w0VUDBALxeNTxVjYRaRwHcmxu4BXakarvTzwkIi0C",
        "bcrypt$$2b$12$10S22VRlrU84a9lbkmVSn.M8/DhQCBkkr3Ta5PE374EFuxjryhX4q",
        "$6$rounds=1000$TPDEdoqjFnDBPLoR$igRSM1Wlh4A7YmBvcIoXKuVKO9P9n/PpYxhhTKLJokqMOMc/jtSglzchzqIyZuOIiIeGIZrFZktRO7lTRhmv90",
        "$5$rounds=535000$9HO3MbCxfvemaHks$B2JYhs.uoYQy/de.5PLHTxLQGUyB/BX9iKKKUt04cc1",
        "$pbkdf2-sha256$1000$dy5lTIlx7t0bA0CI8Z5zrg$.sPcqNRf6AFUk664xNXmHldCoG5zjlQY3Hud1NlYvYo",
        "$pbkdf2-sha512$1000$.R.jtHYO4VyLEWKMEaI0pg$XBhxXEAw5ST.BmIgQLprR8jGvGHOcfhRGBIqqtWy.izFwG9sXkrUE6uXeUysejFoktxLn4yIPlckawfDIW5mUg",
        "pbkdf2_sha256$1000000$5f1B0LegI3o7JZG8fk9lLH$zZQxUZ/V/AxXKBWDw0gyOydBwzw3mm3qgdEuyruOEeY=",
        "pbkdf2:sha256:1000000$aPPB2CeREKSYPds7$10513d03a6526dc975fb05f3b0d17de2800a76cc83af653a7c2942de785663a1",
        "pbkdf2:sha512:1000$FQc2n1Gk0yuQ9VoI$d543f4d460b71ee5ec4d69736d2b27306859dcb89e6048e653f536ace8faf01deffcb5b05ce8c45e861ba45826365b72e8dd198781a4df46b6517af96d525bcd",
        "$scrypt$ln=4,r=8,p=1$UMo5pzRm7J0zZoxxDkEo5Q$46jioT+PwBah+NuExcBZLYrPW7Qy31AVmi1ALs6hDGs",
        "scrypt$16384$PY6b4oDfeMPOXhRTbOTM0C$8$5$b9bIiyNfcajqq52Fx5Z9fjkSJ6McEcPhXtdbb04EZ+g6jaWb3b/Jak4mO+0RfmZw3WkgAZYwJ+H0JjhHF9ihkw==",
        "scrypt:32768:8:1$1wmNyzrXBJVfhk70$53863248b0da171108fa207a404dc41abbc5b1eb5f60ac73a0059cff630c047f5d8d0ccecdc550a85c14d89116b3017d2a5af98415effae66c0194617d272f34",
        "$argon2i$v=19$m=64,t=1,p=1$JupeX5LH9IjIfbEEB/Oq4w$w+YR1yoD72/Ixb8Y0M2mZS5u1O4F4ohDVmp7fqzjbso",
        "$argon2id$v=19$m=64,t=1,p=1$AQ5x6hqhvb1kwjuiwCE49Q$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM",
        "argon2$argon2id$v=19$m=102400,t=2,p=8$emdLY2V6TDNQYWtGOThTRVFCQTM1Qw$ReBdvFtE9h7x6ONTrjvqguW6T+YqES56jUd+dfbe6yg",
    ]

    func testEveryFormatVerifiesItsPasswordAndNoOther() {
        for vector in Self.vectors {
            XCTAssertTrue(hasher.verify("correct horse", against: vector), vector)
            XCTAssertFalse(hasher.verify("correct horsf", against: vector), vector)
            XCTAssertFalse(hasher.verify("correct horse ", against: vector), vector)
            XCTAssertFalse(hasher.verify("", against: vector), vector)
        }
    }

    func testEveryLegacyFormatAndWeakerArgon2NeedsARehash() throws {
        for vector in Self.vectors { XCTAssertTrue(hasher.needsRehash(vector), vector) }
        let current = try hasher.hash("correct horse")
        XCTAssertFalse(hasher.needsRehash(current))
        XCTAssertTrue(PasswordHasher().needsRehash(current), "other parameters than the current ones")
        // The current parameters with a short digest or salt (argon2-cffi: hash_len 16, salt_len 8).
        XCTAssertTrue(
            hasher.needsRehash("$argon2id$v=19$m=256,t=1,p=1$AQ5x6hqhvb1kwjuiwCE49Q$kKxUAMuqK6sUIEOuA6RPIQ"))
        XCTAssertTrue(
            hasher.needsRehash("$argon2id$v=19$m=256,t=1,p=1$AQ5x6hqhvb0$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM"))
        XCTAssertTrue(
            hasher.needsRehash(
                "$argon2id$v=16$m=256,t=1,p=1$AQ5x6hqhvb1kwjuiwCE49Q$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM"))
        XCTAssertFalse(
            hasher.needsRehash(
                "$argon2id$v=19$m=256,t=1,p=1$AQ5x6hqhvb1kwjuiwCE49Q$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM"))
    }

    func testAChangedDigestOrSaltNeverVerifies() {
        for vector in Self.vectors {
            var bytes = Array(vector.utf8)
            // Swap two different characters of the digest's body for a valid, different digest of the same form.
            let index = bytes.count - 6
            let replacement: UInt8 = bytes[index] == UInt8(ascii: "a") ? UInt8(ascii: "b") : UInt8(ascii: "a")
            bytes[index] = replacement
            XCTAssertFalse(hasher.verify("correct horse", against: String(decoding: bytes, as: UTF8.self)), vector)
        }
    }

    func testAPasswordWithANulByteNeverMatchesACryptHash() throws {
        XCTAssertFalse(hasher.verify("correct horse\u{0}", against: Self.vectors[0]))
        XCTAssertFalse(hasher.verify("correct horse\u{0}tail", against: Self.vectors[2]))
    }

    func testOverlongPasswordsNeverReachAnyAlgorithm() {
        let long = String(repeating: "a", count: PasswordHasher.maximumPasswordLength + 1)
        for vector in Self.vectors { XCTAssertFalse(hasher.verify(long, against: vector), vector) }
    }
}
