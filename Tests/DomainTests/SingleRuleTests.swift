import Domain
import XCTest

final class EmailLimitKeyTests: XCTestCase {
    func testAnAddressAndTextThatIsNotOneAreKeyedByTheSameRule() {
        XCTAssertEqual(EmailAddress.limitKey("  Ada@Example.COM "), "ada@example.com")
        XCTAssertEqual(EmailAddress.limitKey(" Not An Address "), "not an address")
        XCTAssertEqual(EmailAddress.limitKey("NOT-AN-ADDRESS"), EmailAddress.limitKey("not-an-address"))
        XCTAssertEqual(EmailAddress.limitKey(String(repeating: "A", count: 1000)).count, EmailAddress.maximumLength)
    }
}

final class SignInMethodsTests: XCTestCase {
    func testAPasskeyGoesOnlyWhenAnotherWayToSignInStays() {
        XCTAssertTrue(SignInMethods(hasPassword: true, passkeyCount: 1).canRemovePasskey)
        XCTAssertTrue(SignInMethods(hasPassword: false, passkeyCount: 2).canRemovePasskey)
        XCTAssertFalse(SignInMethods(hasPassword: false, passkeyCount: 1).canRemovePasskey)
        XCTAssertThrowsError(try SignInMethods(hasPassword: false, passkeyCount: 1).checkPasskeyRemoval()) {
            XCTAssertEqual(($0 as? DomainError)?.code, .lastSignInMethod)
        }
    }

    func testThePasswordGoesOnlyOnceAPasskeyHasSignedIn() {
        XCTAssertNoThrow(
            try SignInMethods(hasPassword: true, passkeyCount: 1, passkeySignedIn: true).checkPasswordRemoval())
        for (methods, code, reason) in [
            (SignInMethods(hasPassword: false, passkeyCount: 1, passkeySignedIn: true), DomainError.Code.notFound, nil),
            (SignInMethods(hasPassword: true, passkeyCount: 0), .lastSignInMethod, PasswordRemovalRefusal.noPasskey),
            (
                SignInMethods(hasPassword: true, passkeyCount: 2), .lastSignInMethod,
                PasswordRemovalRefusal.passkeySignInRequired
            ),
        ] as [(SignInMethods, DomainError.Code, String?)] {
            XCTAssertThrowsError(try methods.checkPasswordRemoval()) { error in
                XCTAssertEqual((error as? DomainError)?.code, code)
                XCTAssertEqual((error as? DomainError)?.reason, reason)
            }
        }
    }
}
