import AccountImport
import Domain
import Foundation
import XCTest

final class RecordValidatorTests: XCTestCase {
    // Made by Python's bcrypt (bcrypt.hashpw(b"correct horse", bcrypt.gensalt(4))).
    static let bcryptHash = "$2b$04$CbZQvG4h7eJBqnsak0PGFuaojnsZ42/rhD8.cVCoR8qsOkC0GlOqK"
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    var validator: RecordValidator { RecordValidator(now: now) }

    private func reject(_ values: [ImportField: String], flag: Bool? = nil) -> ImportReject? {
        if case .failure(let reject) = validator.validate(RawImportRecord(values: values, emailVerifiedFlag: flag)) {
            return reject
        }
        return nil
    }

    func testAFullRecordIsKeptAsGivenWithTheDomainsEmailRule() throws {
        let record = try validator.validate(
            RawImportRecord(values: [
                .email: "  Ada@Example.COM ", .displayName: " Ada Lovelace ", .passwordHash: Self.bcryptHash,
                .externalID: "crm-17", .createdAt: "2021-03-04T05:06:07.5+01:00", .emailVerified: "true",
            ])
        ).get()
        XCTAssertEqual(record.email, EmailAddress("Ada@Example.COM"))
        XCTAssertEqual(record.email.normalized, "ada@example.com")
        XCTAssertEqual(record.displayName, "Ada Lovelace")
        XCTAssertEqual(record.passwordHash, Self.bcryptHash)
        XCTAssertEqual(record.externalID, "crm-17")
        XCTAssertEqual(record.createdAtMicroseconds, 1_614_830_767_500_000)
        XCTAssertTrue(record.emailVerified)
        XCTAssertEqual(record.digest.count, 32)
    }

    func testAbsentFieldsGetTheirDefaults() throws {
        let record = try validator.validate(RawImportRecord(values: [.email: "grace.hopper@example.com"])).get()
        XCTAssertEqual(record.displayName, "grace.hopper")
        XCTAssertNil(record.passwordHash)
        XCTAssertNil(record.externalID)
        XCTAssertNil(record.createdAtMicroseconds)
        XCTAssertFalse(record.emailVerified)
        XCTAssertEqual(record.createdAt(orNow: now), now)
    }

    func testTheDigestChangesWithEveryField() throws {
        let base: [ImportField: String] = [.email: "a@b.c", .displayName: "A", .externalID: "1"]
        let digest = try validator.validate(RawImportRecord(values: base)).get().digest
        XCTAssertEqual(try validator.validate(RawImportRecord(values: base)).get().digest, digest)
        for (field, value) in [
            (ImportField.email, "A@b.c"), (.displayName, "B"), (.externalID, "2"),
            (.createdAt, "2020-01-01T00:00:00Z"), (.passwordHash, Self.bcryptHash),
        ] {
            var changed = base
            changed[field] = value
            XCTAssertNotEqual(try validator.validate(RawImportRecord(values: changed)).get().digest, digest, "\(field)")
        }
        XCTAssertNotEqual(
            try validator.validate(RawImportRecord(values: base, emailVerifiedFlag: true)).get().digest, digest)
    }

    func testEachKindOfBadFieldHasItsReason() {
        XCTAssertEqual(reject([:])?.reason, .missingEmail)
        XCTAssertEqual(reject([.email: "  "])?.reason, .missingEmail)
        XCTAssertEqual(reject([.email: "no-at-sign"])?.reason, .invalidEmail)
        XCTAssertEqual(reject([.email: "two@@example.com"])?.reason, .invalidEmail)
        XCTAssertEqual(reject([.email: String(repeating: "a", count: 250) + "@b.cd"])?.reason, .fieldTooLong)
        XCTAssertEqual(
            reject([.email: "a@b.c", .displayName: String(repeating: "n", count: 129)])?.reason, .fieldTooLong)
        XCTAssertEqual(reject([.email: "a@b.c", .displayName: "bell\u{7}"])?.reason, .invalidDisplayName)
        XCTAssertEqual(reject([.email: "a@b.c", .passwordHash: "plaintext"])?.reason, .unknownHashFormat)
        XCTAssertEqual(reject([.email: "a@b.c", .passwordHash: "$2b$04$short"])?.reason, .malformedHash)
        XCTAssertEqual(
            reject([.email: "a@b.c", .passwordHash: String(repeating: "x", count: 513)])?.reason, .fieldTooLong)
        XCTAssertEqual(
            reject([.email: "a@b.c", .externalID: String(repeating: "e", count: 257)])?.reason, .fieldTooLong)
        XCTAssertEqual(reject([.email: "a@b.c", .externalID: " padded"])?.reason, .invalidExternalID)
        XCTAssertEqual(reject([.email: "a@b.c", .externalID: "tab\there"])?.reason, .invalidExternalID)
        XCTAssertEqual(reject([.email: "a@b.c", .createdAt: "yesterday"])?.reason, .invalidCreatedAt)
        XCTAssertEqual(reject([.email: "a@b.c", .createdAt: "2021-02-29T00:00:00Z"])?.reason, .invalidCreatedAt)
        XCTAssertEqual(reject([.email: "a@b.c", .createdAt: "2099-01-01T00:00:00Z"])?.reason, .invalidCreatedAt)
        XCTAssertEqual(reject([.email: "a@b.c", .createdAt: "1969-12-31T23:59:59Z"])?.reason, .invalidCreatedAt)
        XCTAssertEqual(reject([.email: "a@b.c", .createdAt: String(repeating: "1", count: 41)])?.reason, .fieldTooLong)
        XCTAssertEqual(reject([.email: "a@b.c", .emailVerified: "yes"])?.reason, .invalidEmailVerified)
    }

    func testTheDefaultNameIsCutToTheLongestNameAllowed() throws {
        let local = String(repeating: "l", count: 200)
        let record = try validator.validate(RawImportRecord(values: [.email: local + "@b.c"])).get()
        XCTAssertEqual(record.displayName.count, DisplayName.maximumLength)
    }
}
