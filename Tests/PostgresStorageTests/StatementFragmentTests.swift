import Domain
import Foundation
import Observability
import Postgres
import XCTest

@testable import PostgresStorage

/// Every statement fragment that repositories splice into each other (StatementFragments.swift names them all)
/// holds `$` only in its own placeholders, `$1` to `$n` for its n binds, so that splicing renumbers them right;
/// values that contain `$` go as binds, never as text. No database: the fragments are built and read.
final class StatementFragmentTests: XCTestCase {
    /// Why `query`'s text is not exactly placeholders `$1` to `$n` for its n binds, each used; nil when it is.
    static func placeholderProblem(_ query: PostgresQuery) -> String? {
        var used = Set<Int>()
        let bytes = Array(query.sql.utf8)
        var index = 0
        while index < bytes.count {
            defer { index += 1 }
            guard bytes[index] == UInt8(ascii: "$") else { continue }
            var end = index + 1
            while end < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[end]) { end += 1 }
            guard end > index + 1, let number = Int(String(decoding: bytes[(index + 1)..<end], as: UTF8.self)),
                number >= 1, number <= query.binds.count
            else { return "a $ that is not a placeholder of its binds at byte \(index)" }
            used.insert(number)
            index = end - 1
        }
        return used == Set((0..<query.binds.count).map { $0 + 1 }) ? nil : "a bind no placeholder uses"
    }

    /// Each fragment, built from values that themselves hold `$`.
    var fragments: [(String, PostgresQuery)] {
        let account = AccountID.random()
        let session = AuthenticationSession(
            id: .random(), accountID: account, tokenDigest: Array("$1$2".utf8), authenticationMethod: .passkey,
            createdAt: Date(), expiresAt: Date().addingTimeInterval(60), revokedAt: nil,
            refreshDigest: Array("$3".utf8), methodReferences: ["$4", "hwk"], passkeyID: UUID())
        let charge = GuessCharge(accountID: account, kind: .code, limit: .standard, now: Date())
        let context = AuditContext(requestID: "req-$1", clientAddress: "$2", actor: .admin(tokenID: "$3"))
        return AuditContext.$current.withValue(context) {
            [
                ("insertion", PostgresAuthenticationSessionRepository.insertion(session)),
                (
                    "insertion from a source",
                    PostgresAuthenticationSessionRepository.insertion(
                        session, accountFrom: "verified", where: "verified.level < \(Double(3))")
                ),
                ("charge", FailedGuessStatements.charge(charge, onlyWithRoom: false)),
                ("charge with room", FailedGuessStatements.charge(charge, onlyWithRoom: true)),
                (
                    "audit rows",
                    AuditTrail.rows(
                        .sessionRevoked, from: "revoked", detail: ["note": "$9 off", "$1": "x"],
                        rowDetail: "jsonb_build_object('session.id', revoked.id::text)")
                ),
                ("audit row", AuditTrail.row(.passkeyRemoved, account: account, detail: ["credential.id": "$$"])),
                ("audit row without account", AuditTrail.row(.webhookCreated, account: nil)),
                ("notices from a source", SecurityNotices().rows(.passwordChanged, from: "changed")),
                ("notices", SecurityNotices().rows(.passkeyAdded, account: account, device: "Ada's $1 key")),
                (
                    "reauthentication",
                    PostgresAccountSecurityRepository.reauthentication(
                        session.id, from: "verified", method: "passkey", at: Date())
                ),
            ]
        }
    }

    func testEveryFragmentHoldsDollarsOnlyInItsPlaceholders() {
        for (name, fragment) in fragments {
            XCTAssertNil(Self.placeholderProblem(fragment), "\(name): \(fragment.sql)")
            XCTAssertFalse(fragment.binds.isEmpty, name)
        }
    }

    func testSplicedAfterOtherBindsTheyAreRenumberedAndStillWhole() {
        for (name, fragment) in fragments {
            let statement: PostgresQuery =
                "WITH a AS (SELECT \(Int32(1)), \("two")), b AS (\(fragment: fragment)) SELECT 1"
            XCTAssertNil(Self.placeholderProblem(statement), "\(name): \(statement.sql)")
            XCTAssertEqual(statement.binds.count, fragment.binds.count + 2, name)
            XCTAssertTrue(statement.sql.contains("$3"), "the fragment's first placeholder follows the two: \(name)")
        }
    }

    func testTheCheckFindsAStrayDollarAndAnUnusedBind() {
        XCTAssertNotNil(Self.placeholderProblem("SELECT '$5' \(unsafeSQL: "")"), "a $ in a literal")
        XCTAssertNotNil(Self.placeholderProblem("SELECT \(unsafeSQL: "$$x$$"), \(Int32(1))"), "a dollar-quoted body")
        XCTAssertNotNil(
            Self.placeholderProblem(PostgresQuery(unsafeSQL: "SELECT $1", binds: [])), "a placeholder past the binds")
        XCTAssertNil(Self.placeholderProblem("SELECT \(Int32(1)), \(Int32(2))"))
    }
}
