import ServiceIdentity
import XCTest

final class CallerPolicyTests: XCTestCase {
    let policy = CallerPolicy(
        trustDomain: "passkey.test",
        rules: [
            .init(["/a.Service/Public", "/a.Service/Other"], callers: [ServiceIdentity.Name.gateway]),
            .init(["/a.Service/Internal"], callers: [ServiceIdentity.Name.verificationService]),
        ],
        openPaths: ["/grpc.health.v1.Health/Check"])

    func testAllowsTheDeclaredCallerBySPIFFEIDAndByDNSName() {
        XCTAssertEqual(
            policy.decide(path: "/a.Service/Public", peer: .identified("spiffe://passkey.test/gateway")), .allow)
        XCTAssertEqual(policy.decide(path: "/a.Service/Public", peer: .identified("gateway.passkey.test")), .allow)
        XCTAssertEqual(
            policy.decide(path: "/a.Service/Internal", peer: .identified("spiffe://passkey.test/verification-service")),
            .allow)
    }

    func testRefusesAnotherServiceAnotherTrustDomainAndUndeclaredMethods() {
        guard
            case .permissionDenied(let reason) = policy.decide(
                path: "/a.Service/Internal", peer: .identified("spiffe://passkey.test/gateway"))
        else { return XCTFail("the gateway may not call Internal") }
        XCTAssertTrue(reason.contains("spiffe://passkey.test/gateway"), reason)
        guard
            case .permissionDenied = policy.decide(
                path: "/a.Service/Public", peer: .identified("spiffe://other.test/gateway"))
        else { return XCTFail("another trust domain's gateway is not ours") }
        guard
            case .permissionDenied = policy.decide(
                path: "/a.Service/Public", peer: .identified("spiffe://passkey.test/gateway/extra"))
        else { return XCTFail("a longer path is another identity") }
        guard
            case .permissionDenied = policy.decide(
                path: "/a.Service/Undeclared", peer: .identified("spiffe://passkey.test/gateway"))
        else { return XCTFail("a method without a rule is refused") }
    }

    func testRefusesPeersWithoutAVerifiedIdentityAsUnauthenticated() {
        for peer: PeerIdentification in [
            .noCertificate, .anonymous,
            .untrusted(claimed: "spiffe://passkey.test/gateway", reason: "certificate has expired"),
        ] {
            guard case .unauthenticated = policy.decide(path: "/a.Service/Public", peer: peer) else {
                return XCTFail("\(peer) must be unauthenticated")
            }
        }
    }

    func testOpenPathsAnswerAnyoneAndPlaintextIsNotChecked() {
        XCTAssertEqual(policy.decide(path: "/grpc.health.v1.Health/Check", peer: .noCertificate), .allow)
        XCTAssertEqual(
            policy.decide(path: "/grpc.health.v1.Health/Check", peer: .untrusted(claimed: nil, reason: "x")), .allow)
        XCTAssertEqual(policy.decide(path: "/a.Service/Internal", peer: .plaintext), .allow)
        XCTAssertEqual(
            policy.coveredPaths,
            ["/a.Service/Public", "/a.Service/Other", "/a.Service/Internal", "/grpc.health.v1.Health/Check"])
    }

    func testIdentificationPrefersTheSPIFFEURIAndCountsOnlyAVerifiedChain() {
        XCTAssertEqual(
            PeerIdentification(
                uris: ["https://example.com", "spiffe://passkey.test/gateway"], dnsNames: ["gateway.passkey.test"],
                verificationFailure: nil),
            .identified("spiffe://passkey.test/gateway"))
        XCTAssertEqual(
            PeerIdentification(
                uris: ["https://example.com"], dnsNames: ["gateway.passkey.test"], verificationFailure: nil),
            .identified("gateway.passkey.test"))
        XCTAssertEqual(PeerIdentification(uris: [], dnsNames: [], verificationFailure: nil), .anonymous)
        XCTAssertEqual(
            PeerIdentification(
                uris: ["spiffe://passkey.test/gateway"], dnsNames: [], verificationFailure: "certificate has expired"),
            .untrusted(claimed: "spiffe://passkey.test/gateway", reason: "certificate has expired"))
    }

    func testAClientAcceptsOnlyTheServiceItExpects() {
        let expected = ServiceIdentity(ServiceIdentity.Name.sessionService, in: "passkey.test")
        XCTAssertTrue(CallerPolicy.peer(.identified("spiffe://passkey.test/session-service"), is: expected))
        XCTAssertTrue(CallerPolicy.peer(.identified("session-service.passkey.test"), is: expected))
        XCTAssertFalse(CallerPolicy.peer(.identified("spiffe://passkey.test/challenge-service"), is: expected))
        XCTAssertFalse(
            CallerPolicy.peer(.untrusted(claimed: "spiffe://passkey.test/session-service", reason: "x"), is: expected))
    }
}
