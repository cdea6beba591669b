import Domain
import GRPC
import Protobuf
import ServiceContracts
import XCTest

final class ServiceContractsTests: XCTestCase {
    func testMessagesRoundTripIncludingRepeatedEmptyElementsAndNestedMessages() throws {
        var response = BeginRegistrationResponse()
        response.challengeID = "c-1"
        response.challenge = [0, 1, 2, 255]
        response.expiresAtUnixMilliseconds = 1_700_000_000_000
        response.userHandle = [9, 9]
        var descriptor = CredentialDescriptor()
        descriptor.id = [7]
        descriptor.transports = ["usb", "", "internal"]
        response.excludeCredentials = [descriptor, CredentialDescriptor()]
        response.mode = "conditional"
        let decoded = try BeginRegistrationResponse(serializedBytes: response.serializedBytes())
        XCTAssertEqual(decoded, response)

        var finish = FinishRegistrationRequest()
        finish.accountID = "a"
        var credential = RegistrationCredential()
        credential.attestationObject = Array(repeating: 0xA5, count: 300)
        credential.clientExtensionResultsJSON = Array("{\"credProps\":{\"rk\":true}}".utf8)
        finish.credential = credential
        XCTAssertEqual(try FinishRegistrationRequest(serializedBytes: finish.serializedBytes()), finish)
        XCTAssertNil(try FinishRegistrationRequest(serializedBytes: []).credential)
    }

    func testNegativeNumbersRoundTrip() throws {
        var info = SessionInfo()
        info.createdAtUnixMilliseconds = -5
        XCTAssertEqual(try SessionInfo(serializedBytes: info.serializedBytes()).createdAtUnixMilliseconds, -5)
    }

    func testTruncatedMessagesFailInsteadOfCrashing() {
        var request = FinishAuthenticationRequest()
        request.challengeID = "challenge"
        var credential = AuthenticationCredential()
        credential.signature = Array(repeating: 1, count: 70)
        request.credential = credential
        let bytes = request.serializedBytes()
        // Field 1 takes 2 + 9 bytes; a cut exactly after it is a valid shorter message, every other cut is not.
        for cut in 1..<bytes.count where cut != 11 {
            XCTAssertThrowsError(try FinishAuthenticationRequest(serializedBytes: bytes.prefix(cut)), "cut \(cut)")
        }
        XCTAssertNil(try FinishAuthenticationRequest(serializedBytes: bytes.prefix(11)).credential)
    }

    func testEveryDomainErrorSurvivesTheTrip() {
        for code in DomainError.Code.allCases {
            let error = DomainError(code, "message", reason: code == .verificationFailed ? "signature_invalid" : nil)
            let rpc = ServiceErrors.rpcError(error)
            XCTAssertEqual(rpc.code, ServiceErrors.statusCode(for: code))
            XCTAssertEqual(ServiceErrors.domainError(from: rpc), error)
        }
        XCTAssertNil(ServiceErrors.domainError(from: RPCError(code: .internal, message: "boom")))
    }

    func testMethodPathsFollowTheProtoPackage() {
        XCTAssertEqual(ChallengeServiceMethods.beginRegistration, "/passkey.v1.ChallengeService/BeginRegistration")
        XCTAssertEqual(VerificationServiceMethods.finishAuthentication, "/passkey.v1.VerificationService/FinishAuthentication")
        XCTAssertEqual(SessionServiceMethods.validateSession, "/passkey.v1.SessionService/ValidateSession")
    }
}
