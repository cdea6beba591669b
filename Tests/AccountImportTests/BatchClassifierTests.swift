import AccountImport
import Foundation
import XCTest

final class BatchClassifierTests: XCTestCase {
    private func candidate(_ line: Int, _ email: String, externalID: String? = nil, name: String = "N") throws
        -> ImportCandidate
    {
        var values: [ImportField: String] = [.email: email, .displayName: name]
        values[.externalID] = externalID
        let record = try RecordValidator(now: Date()).validate(RawImportRecord(values: values)).get()
        return ImportCandidate(line: line, record: record)
    }

    func testTheFirstLineWinsAndLaterOnesNameIt() throws {
        let candidates = [
            try candidate(2, "a@example.com", externalID: "x"), try candidate(3, "A@EXAMPLE.com"),
            try candidate(4, "b@example.com", externalID: "x"), try candidate(5, "c@example.com"),
        ]
        let result = BatchClassification(candidates, lookup: BatchLookup())
        XCTAssertEqual(
            result.decisions,
            [
                .insert, .rejected(ImportReject(.duplicateEmail, "the same email is on line 2")),
                .rejected(ImportReject(.duplicateExternalID, "the same externalID is on line 2")), .insert,
            ])
        XCTAssertEqual(result.newlySeenEmails.map(\.0), ["a@example.com", "c@example.com"])
        XCTAssertEqual(result.newlySeenEmails.map(\.1), [2, 5])
        XCTAssertEqual(result.newlySeenExternalIDs.map(\.0), ["x"])
    }

    func testWhatTheDatabaseHoldsDecides() throws {
        let same = try candidate(2, "same@example.com")
        let changed = try candidate(3, "changed@example.com", name: "New")
        let signedUp = try candidate(4, "signed-up@example.com")
        let takenID = try candidate(5, "new@example.com", externalID: "taken")
        let earlier = try candidate(6, "earlier@example.com", externalID: "seen")
        let earlierID = try candidate(7, "other@example.com", externalID: "seen")
        var lookup = BatchLookup()
        lookup.existingEmails = [
            "same@example.com": same.record.digest,
            "changed@example.com": try candidate(3, "changed@example.com").record.digest,
            "signed-up@example.com": [UInt8]?.none, "earlier@example.com": earlier.record.digest,
        ]
        lookup.existingExternalIDs = ["taken", "seen"]
        lookup.seenEmails = ["earlier@example.com": 1]
        lookup.seenExternalIDs = ["seen": 1]
        let result = BatchClassification([same, changed, signedUp, takenID, earlier, earlierID], lookup: lookup)
        XCTAssertEqual(
            result.decisions,
            [
                .unchanged,
                .rejected(ImportReject(.emailTaken, "the email belongs to another account")),
                .rejected(ImportReject(.emailTaken, "the email belongs to another account")),
                .rejected(ImportReject(.externalIDTaken, "the externalID belongs to another account")),
                .rejected(ImportReject(.duplicateEmail, "the same email is on line 1")),
                .rejected(ImportReject(.duplicateExternalID, "the same externalID is on line 1")),
            ])
        // An unchanged line is met as much as an imported one: its duplicates further down are duplicates.
        XCTAssertEqual(result.newlySeenEmails.map(\.0), ["same@example.com"])
    }
}
