import PasswordHashing
import XCTest

/// Hashes written by passlib 1.7, bcrypt 4, argon2-cffi 23, Django 5 and Werkzeug 3 (password "correct horse").
final class StoredPasswordHashTests: XCTestCase {
    func parse(_ text: String) throws -> StoredPasswordHash { try StoredPasswordHash(parsing: text) }

    func refusal(_ text: String) -> StoredPasswordHashError? {
        do {
            _ = try StoredPasswordHash(parsing: text)
            return nil
        } catch {
            return error
        }
    }

    func testArgon2PHCStringsGiveTheirParametersSaltAndDigest() throws {
        let hash = try parse(
            "$argon2id$v=19$m=64,t=1,p=1$AQ5x6hqhvb1kwjuiwCE49Q$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM")
        guard case .argon2(let argon2) = hash.algorithm else { return XCTFail("\(hash.algorithm)") }
        XCTAssertEqual(argon2.variant, .argon2id)
        XCTAssertEqual(argon2.version, 0x13)
        XCTAssertEqual([argon2.memoryKiB, argon2.iterations, argon2.parallelism], [64, 1, 1])
        XCTAssertEqual(argon2.salt.count, 16)
        XCTAssertEqual(argon2.digest.count, 32)
        XCTAssertEqual(hash.schemeName, "argon2id")

        let argon2i = try parse(
            "$argon2i$v=19$m=64,t=1,p=1$JupeX5LH9IjIfbEEB/Oq4w$w+YR1yoD72/Ixb8Y0M2mZS5u1O4F4ohDVmp7fqzjbso")
        XCTAssertEqual(argon2i.schemeName, "argon2i")
        let django = try parse(
            "argon2$argon2id$v=19$m=102400,t=2,p=8$emdLY2V6TDNQYWtGOThTRVFCQTM1Qw$ReBdvFtE9h7x6ONTrjvqguW6T+YqES56jUd+dfbe6yg"
        )
        guard case .argon2(let fromDjango) = django.algorithm else { return XCTFail() }
        XCTAssertEqual([fromDjango.memoryKiB, fromDjango.iterations, fromDjango.parallelism], [102400, 2, 8])
        // No version field: the original 0x10.
        let old = try parse("$argon2i$m=64,t=1,p=1$JupeX5LH9IjIfbEEB/Oq4w$w+YR1yoD72/Ixb8Y0M2mZS5u1O4F4ohDVmp7fqzjbso")
        guard case .argon2(let unversioned) = old.algorithm else { return XCTFail() }
        XCTAssertEqual(unversioned.version, 0x10)
    }

    func testCryptFamiliesAreRecognizedWithTheirCosts() throws {
        let bcrypt = try parse("$2b$04$5uNMsxnFvuX4w0VUDBALxeNTxVjYRaRwHcmxu4BXakarvTzwkIi0C")
        XCTAssertEqual(bcrypt.algorithm, .bcrypt(cost: 4, cryptText: bcrypt.encoded))
        for prefix in ["$2a$", "$2y$"] {
            let text = prefix + "04$5uNMsxnFvuX4w0VUDBALxeNTxVjYRaRwHcmxu4BXakarvTzwkIi0C"
            XCTAssertEqual(try parse(text).algorithm, .bcrypt(cost: 4, cryptText: text))
        }
        let django = try parse("bcrypt$$2b$12$10S22VRlrU84a9lbkmVSn.M8/DhQCBkkr3Ta5PE374EFuxjryhX4q")
        XCTAssertEqual(
            django.algorithm,
            .bcrypt(cost: 12, cryptText: "$2b$12$10S22VRlrU84a9lbkmVSn.M8/DhQCBkkr3Ta5PE374EFuxjryhX4q"))

        let sha512 = try parse(
            "$6$rounds=1000$TPDEdoqjFnDBPLoR$igRSM1Wlh4A7YmBvcIoXKuVKO9P9n/PpYxhhTKLJokqMOMc/jtSglzchzqIyZuOIiIeGIZrFZktRO7lTRhmv90"
        )
        XCTAssertEqual(sha512.algorithm, .shaCrypt(.sha512Crypt, rounds: 1000))
        let sha256 = try parse("$5$rounds=535000$9HO3MbCxfvemaHks$B2JYhs.uoYQy/de.5PLHTxLQGUyB/BX9iKKKUt04cc1")
        XCTAssertEqual(sha256.algorithm, .shaCrypt(.sha256Crypt, rounds: 535000))
        let defaultRounds = try parse("$5$9HO3MbCxfvemaHks$B2JYhs.uoYQy/de.5PLHTxLQGUyB/BX9iKKKUt04cc1")
        XCTAssertEqual(defaultRounds.algorithm, .shaCrypt(.sha256Crypt, rounds: nil))
    }

    func testPBKDF2InPasslibDjangoAndWerkzeugForms() throws {
        let passlib = try parse(
            "$pbkdf2-sha256$1000$dy5lTIlx7t0bA0CI8Z5zrg$.sPcqNRf6AFUk664xNXmHldCoG5zjlQY3Hud1NlYvYo")
        guard case .pbkdf2(let p) = passlib.algorithm else { return XCTFail() }
        XCTAssertEqual(p.digest, .sha256)
        XCTAssertEqual(p.iterations, 1000)
        XCTAssertEqual(p.salt.count, 16)
        XCTAssertEqual(p.derivedKey.count, 32)
        XCTAssertEqual(p.dialect, .phc)

        let sha512 = try parse(
            "$pbkdf2-sha512$1000$.R.jtHYO4VyLEWKMEaI0pg$XBhxXEAw5ST.BmIgQLprR8jGvGHOcfhRGBIqqtWy.izFwG9sXkrUE6uXeUysejFoktxLn4yIPlckawfDIW5mUg"
        )
        guard case .pbkdf2(let p512) = sha512.algorithm else { return XCTFail() }
        XCTAssertEqual(p512.digest, .sha512)
        XCTAssertEqual(p512.derivedKey.count, 64)
        XCTAssertEqual(sha512.schemeName, "pbkdf2-sha512")

        let django = try parse(
            "pbkdf2_sha256$1000000$5f1B0LegI3o7JZG8fk9lLH$zZQxUZ/V/AxXKBWDw0gyOydBwzw3mm3qgdEuyruOEeY=")
        guard case .pbkdf2(let d) = django.algorithm else { return XCTFail() }
        XCTAssertEqual(d.iterations, 1_000_000)
        XCTAssertEqual(d.salt, Array("5f1B0LegI3o7JZG8fk9lLH".utf8))
        XCTAssertEqual(d.derivedKey.count, 32)
        XCTAssertEqual(d.dialect, .django)

        let werkzeug = try parse(
            "pbkdf2:sha256:1000000$aPPB2CeREKSYPds7$10513d03a6526dc975fb05f3b0d17de2800a76cc83af653a7c2942de785663a1")
        guard case .pbkdf2(let w) = werkzeug.algorithm else { return XCTFail() }
        XCTAssertEqual(w.salt, Array("aPPB2CeREKSYPds7".utf8))
        XCTAssertEqual(w.derivedKey.prefix(2), [0x10, 0x51])
        XCTAssertEqual(w.dialect, .werkzeug)
    }

    func testScryptInPasslibDjangoAndWerkzeugForms() throws {
        let passlib = try parse(
            "$scrypt$ln=4,r=8,p=1$UMo5pzRm7J0zZoxxDkEo5Q$46jioT+PwBah+NuExcBZLYrPW7Qy31AVmi1ALs6hDGs")
        guard case .scrypt(let s) = passlib.algorithm else { return XCTFail() }
        XCTAssertEqual([s.costN, UInt64(s.blockSize), UInt64(s.parallelism)], [16, 8, 1])
        XCTAssertEqual(s.derivedKey.count, 32)

        let django = try parse(
            "scrypt$16384$PY6b4oDfeMPOXhRTbOTM0C$8$5$b9bIiyNfcajqq52Fx5Z9fjkSJ6McEcPhXtdbb04EZ+g6jaWb3b/Jak4mO+0RfmZw3WkgAZYwJ+H0JjhHF9ihkw=="
        )
        guard case .scrypt(let d) = django.algorithm else { return XCTFail() }
        XCTAssertEqual([d.costN, UInt64(d.blockSize), UInt64(d.parallelism)], [16384, 8, 5])
        XCTAssertEqual(d.salt, Array("PY6b4oDfeMPOXhRTbOTM0C".utf8))
        XCTAssertEqual(d.derivedKey.count, 64)

        let werkzeug = try parse(
            "scrypt:32768:8:1$1wmNyzrXBJVfhk70$53863248b0da171108fa207a404dc41abbc5b1eb5f60ac73a0059cff630c047f5d8d0ccecdc550a85c14d89116b3017d2a5af98415effae66c0194617d272f34"
        )
        guard case .scrypt(let w) = werkzeug.algorithm else { return XCTFail() }
        XCTAssertEqual(w.costN, 32768)
        XCTAssertEqual(w.derivedKey.count, 64)
        XCTAssertEqual(w.dialect, .werkzeug)
    }

    func testUnknownFormatsAreRefusedAsUnknown() {
        for text in [
            "plaintext", "$1$saltsalt$hashhashhashhashhashha",
            "$argon2d$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
            "{SSHA}abcdef", "md5$salt$0123456789abcdef0123456789abcdef",
            "bcrypt_sha256$$2b$12$10S22VRlrU84a9lbkmVSn.M8/DhQCBkkr3Ta5PE374EFuxjryhX4q",
            "$pbkdf2$1000$c2FsdA$aGFzaA", "pbkdf2_sha1$1000$salt$aGFzaGhhc2hoYXNoaGFzaA==",
        ] {
            XCTAssertEqual(refusal(text)?.code, .unknownFormat, text)
        }
        XCTAssertEqual(
            refusal("pbkdf2:md5:1000$salt$00112233445566778899aabbccddeeff")?.reason, "pbkdf2_unsupported_digest")
    }

    func testMalformedFieldsAreRefusedWithAReason() {
        let cases: [(String, String)] = [
            ("", "empty_hash"),
            (String(repeating: "a", count: 513), "hash_too_long"),
            ("$2b$04$5uNMsxnFvuX4w0VUDBALxeNTxVjYRaRwHcmxu4BXakarvTzwkIi0 ", "hash_not_printable_ascii"),
            ("$2b$04$5uNMsxnFvuX4w0VUDBALxeNTxVjYRaRwHcmxu4BXakarvTzwkIi0", "bcrypt_malformed"),
            ("$2b$04$5uNMsxnFvuX4w0VUDBALxeNTxVjYRaRwHcmxu4BXakarvTzwkIi0C0", "bcrypt_malformed"),
            ("$2b$4x$5uNMsxnFvuX4w0VUDBALxeNTxVjYRaRwHcmxu4BXakarvTzwkIi0C", "bcrypt_malformed"),
            ("$2b$04$5uNMsxnFvuX4w0VUDBALxeNTxVjYRaRwHcmxu4BXakarvTzwkIi0+", "bcrypt_malformed"),
            ("$5$9HO3MbCxfvemaHks$B2JYhs.uoYQy/de.5PLHTxLQGUyB/BX9iKKKUt04cc", "sha256_crypt_malformed"),
            ("$6$salt$short", "sha512_crypt_malformed"),
            ("$5$rounds=01000$9HO3MbCxfvemaHks$B2JYhs.uoYQy/de.5PLHTxLQGUyB/BX9iKKKUt04cc1", "sha_crypt_bad_rounds"),
            ("$5$rounds=$9HO3MbCxfvemaHks$B2JYhs.uoYQy/de.5PLHTxLQGUyB/BX9iKKKUt04cc1", "sha_crypt_bad_rounds"),
            ("$5$01234567890123456$B2JYhs.uoYQy/de.5PLHTxLQGUyB/BX9iKKKUt04cc1", "sha256_crypt_malformed"),
            (
                "$argon2id$v=18$m=64,t=1,p=1$AQ5x6hqhvb1kwjuiwCE49Q$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM",
                "argon2_bad_version"
            ),
            (
                "$argon2id$v=19$t=1,m=64,p=1$AQ5x6hqhvb1kwjuiwCE49Q$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM",
                "argon2_bad_parameters"
            ),
            (
                "$argon2id$v=19$m=64,t=1,p=1,keyid=x$AQ5x6hqhvb1kwjuiwCE49Q$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM",
                "argon2_bad_parameters"
            ),
            (
                "$argon2id$v=19$m=64,t=1,p=1$AQ5x6hqhvb1kwjuiwCE49Q==$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM",
                "argon2_bad_salt"
            ),
            ("$argon2id$v=19$m=64,t=1,p=1$c2FsdA$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM", "argon2_bad_salt"),
            (
                "$argon2id$v=19$m=64,t=1,p=1$AQ5x6hqhvb1kwjuiwCE49Q$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVN",
                "argon2_bad_digest"
            ),
            ("$argon2id$v=19$m=64,t=1,p=1$AQ5x6hqhvb1kwjuiwCE49Q", "argon2_bad_fields"),
            (
                "$pbkdf2-sha256$1000$dy5lTIlx7t0bA0CI8Z5zrg$+sPcqNRf6AFUk664xNXmHldCoG5zjlQY3Hud1NlYvYo",
                "pbkdf2_malformed"
            ),
            (
                "$pbkdf2-sha256$-1000$dy5lTIlx7t0bA0CI8Z5zrg$.sPcqNRf6AFUk664xNXmHldCoG5zjlQY3Hud1NlYvYo",
                "pbkdf2_malformed"
            ),
            ("$pbkdf2-sha256$1000$dy5lTIlx7t0bA0CI8Z5zrg$.sPcqNRf", "pbkdf2_bad_digest"),
            ("$pbkdf2-sha256$1000$$.sPcqNRf6AFUk664xNXmHldCoG5zjlQY3Hud1NlYvYo", "pbkdf2_bad_salt"),
            (
                "pbkdf2_sha256$1000000$5f1B0LegI3o7JZG8fk9lLH$zZQxUZ/V/AxXKBWDw0gyOydBwzw3mm3qgdEuyruOEeY",
                "pbkdf2_malformed"
            ),
            (
                "pbkdf2:sha256$aPPB2CeREKSYPds7$10513d03a6526dc975fb05f3b0d17de2800a76cc83af653a7c2942de785663a1",
                "pbkdf2_malformed"
            ),
            (
                "pbkdf2:sha256:1000$aPPB2CeREKSYPds7$10513d03a6526dc975fb05f3b0d17de2800a76cc83af653a7c2942de785663a",
                "pbkdf2_malformed"
            ),
            ("$scrypt$ln=4,r=8$UMo5pzRm7J0zZoxxDkEo5Q$46jioT+PwBah+NuExcBZLYrPW7Qy31AVmi1ALs6hDGs", "scrypt_malformed"),
            ("scrypt:32768:8$1wmNyzrXBJVfhk70$5386", "scrypt_malformed"),
            (
                "scrypt:30000:8:1$1wmNyzrXBJVfhk70$53863248b0da171108fa207a404dc41abbc5b1eb5f60ac73a0059cff630c047f",
                "scrypt_cost_not_power_of_two"
            ),
            ("scrypt$16384$salt$8$5$b9bIiyNfcajqq52Fx5Z9fjkSJ6McEcPhXtdbb04EZ+g6jaWb3b", "scrypt_malformed"),
        ]
        for (text, reason) in cases {
            let error = refusal(text)
            XCTAssertEqual(error?.reason, reason, text)
            XCTAssertNotEqual(error?.code, .costOutOfRange, text)
        }
    }

    func testAbsurdCostsAreRefusedBeforeAnythingIsComputed() {
        let cases: [(String, String)] = [
            ("$2b$17$5uNMsxnFvuX4w0VUDBALxeNTxVjYRaRwHcmxu4BXakarvTzwkIi0C", "bcrypt_cost_out_of_range"),
            ("$2b$03$5uNMsxnFvuX4w0VUDBALxeNTxVjYRaRwHcmxu4BXakarvTzwkIi0C", "bcrypt_cost_out_of_range"),
            (
                "$5$rounds=999$9HO3MbCxfvemaHks$B2JYhs.uoYQy/de.5PLHTxLQGUyB/BX9iKKKUt04cc1",
                "sha_crypt_rounds_out_of_range"
            ),
            (
                "$6$rounds=999999999$TPDEdoqjFnDBPLoR$igRSM1Wlh4A7YmBvcIoXKuVKO9P9n/PpYxhhTKLJokqMOMc/jtSglzchzqIyZuOIiIeGIZrFZktRO7lTRhmv90",
                "sha_crypt_rounds_out_of_range"
            ),
            (
                "$argon2id$v=19$m=4194304,t=1,p=1$AQ5x6hqhvb1kwjuiwCE49Q$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM",
                "argon2_cost_out_of_range"
            ),
            (
                "$argon2id$v=19$m=64,t=65,p=1$AQ5x6hqhvb1kwjuiwCE49Q$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM",
                "argon2_cost_out_of_range"
            ),
            (
                "$argon2id$v=19$m=64,t=1,p=17$AQ5x6hqhvb1kwjuiwCE49Q$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM",
                "argon2_cost_out_of_range"
            ),
            (
                "$argon2id$v=19$m=64,t=1,p=0$AQ5x6hqhvb1kwjuiwCE49Q$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM",
                "argon2_cost_out_of_range"
            ),
            (
                "$argon2id$v=19$m=99999999999,t=1,p=1$AQ5x6hqhvb1kwjuiwCE49Q$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM",
                "argon2_bad_parameters"
            ),
            (
                "$pbkdf2-sha256$5000001$dy5lTIlx7t0bA0CI8Z5zrg$.sPcqNRf6AFUk664xNXmHldCoG5zjlQY3Hud1NlYvYo",
                "pbkdf2_iterations_out_of_range"
            ),
            (
                "$pbkdf2-sha256$0$dy5lTIlx7t0bA0CI8Z5zrg$.sPcqNRf6AFUk664xNXmHldCoG5zjlQY3Hud1NlYvYo",
                "pbkdf2_iterations_out_of_range"
            ),
            (
                "$scrypt$ln=21,r=8,p=1$UMo5pzRm7J0zZoxxDkEo5Q$46jioT+PwBah+NuExcBZLYrPW7Qy31AVmi1ALs6hDGs",
                "scrypt_cost_out_of_range"
            ),
            (
                "$scrypt$ln=64,r=8,p=1$UMo5pzRm7J0zZoxxDkEo5Q$46jioT+PwBah+NuExcBZLYrPW7Qy31AVmi1ALs6hDGs",
                "scrypt_cost_out_of_range"
            ),
            (
                "$scrypt$ln=4,r=8,p=17$UMo5pzRm7J0zZoxxDkEo5Q$46jioT+PwBah+NuExcBZLYrPW7Qy31AVmi1ALs6hDGs",
                "scrypt_cost_out_of_range"
            ),
            (
                "scrypt:1048576:8:1$1wmNyzrXBJVfhk70$53863248b0da171108fa207a404dc41abbc5b1eb5f60ac73a0059cff630c047f",
                "scrypt_cost_out_of_range"
            ),
        ]
        for (text, reason) in cases {
            XCTAssertEqual(refusal(text)?.reason, reason, text)
        }
        XCTAssertEqual(
            refusal("$2b$17$5uNMsxnFvuX4w0VUDBALxeNTxVjYRaRwHcmxu4BXakarvTzwkIi0C")?.code, .costOutOfRange)
    }

    func testEveryTruncationOfAValidHashIsRefusedAndNeverTraps() throws {
        for valid in [
            "$argon2id$v=19$m=64,t=1,p=1$AQ5x6hqhvb1kwjuiwCE49Q$kKxUAMuqK6sUIEOuA6RPIbv+AaIkqD45mbhZwJABXVM",
            "$2b$04$5uNMsxnFvuX4w0VUDBALxeNTxVjYRaRwHcmxu4BXakarvTzwkIi0C",
            "$pbkdf2-sha256$1000$dy5lTIlx7t0bA0CI8Z5zrg$.sPcqNRf6AFUk664xNXmHldCoG5zjlQY3Hud1NlYvYo",
            "scrypt$16384$PY6b4oDfeMPOXhRTbOTM0C$8$5$b9bIiyNfcajqq52Fx5Z9fjkSJ6McEcPhXtdbb04EZ+g6jaWb3b/Jak4mO+0RfmZw3WkgAZYwJ+H0JjhHF9ihkw==",
            "pbkdf2:sha256:1000000$aPPB2CeREKSYPds7$10513d03a6526dc975fb05f3b0d17de2800a76cc83af653a7c2942de785663a1",
        ] {
            XCTAssertNoThrow(try parse(valid))
            // Any cut up to and including the digest's `$` leaves a field missing or empty.
            let bytes = Array(valid.utf8)
            let lastSeparator = bytes.lastIndex(of: UInt8(ascii: "$"))!
            for length in 0...(lastSeparator + 1) {
                let cut = String(decoding: bytes.prefix(length), as: UTF8.self)
                XCTAssertNotNil(refusal(cut), "\(valid) cut to \(cut)")
            }
        }
        // bcrypt has a fixed length: every shorter prefix is refused.
        let bcrypt = Array("$2b$04$5uNMsxnFvuX4w0VUDBALxeNTxVjYRaRwHcmxu4BXakarvTzwkIi0C".utf8)
        for length in 0..<bcrypt.count {
            XCTAssertNotNil(refusal(String(decoding: bcrypt.prefix(length), as: UTF8.self)))
        }
    }
}
