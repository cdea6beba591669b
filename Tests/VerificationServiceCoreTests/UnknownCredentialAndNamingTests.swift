import Crypto
import Domain
import Foundation
import InMemoryStorage
import Observability
import PasskeyProviders
import SessionIssuance
import SoftwareAuthenticator
import Synchronization
import VerificationServiceCore
import WebAuthn
import XCTest

/// `unknown_credential` is the reason of exactly one failure, a well-formed credential ID that no passkey has, since a
/// page answers it with `signalUnknownCredential` and the browser may then delete the passkey; and a new passkey is
/// named after its provider.
final class UnknownCredentialAndNamingTests: XCTestCase {
    static let rpID = "example.com"
    static let origin = "https://example.com"
    static let google = "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4"

    var passkeys = InMemoryPasskeys()
    lazy var challenges = TableChallenges(store: passkeys)
    let log = MemoryLogSink()
    let accountID = AccountID.random()
    let handle = UserHandle(SecureRandom().bytes(count: 16))!

    func ceremonies(cache: CredentialCache = CredentialCache()) -> PasskeyCeremonies {
        PasskeyCeremonies(
            challenges: challenges, accounts: UnusedAccounts(), passkeys: passkeys, signIns: passkeys,
            sessions: SessionIssuer(random: SecureRandom(), lifetime: 3600),
            lastUse: LastUseRecorder(repository: passkeys), relyingPartyID: Self.rpID,
            origins: OriginPolicy(allowedOrigins: [Self.origin]), credentials: cache,
            logger: Logger(service: "verification-service", sink: log), metrics: MetricsRegistry())
    }

    func register(_ authenticator: SoftwareAuthenticator, with ceremonies: PasskeyCeremonies) async throws
        -> PasskeyCredential
    {
        if passkeys.state.withLock({ $0.accounts[accountID] == nil }) {
            passkeys.addAccount(accountID, handle: handle, displayName: "Ada")
        }
        let (id, challenge) = challenges.issueRegistration()
        return try await ceremonies.finishRegistration(
            accountID: accountID, challengeID: id,
            response: authenticator.makeRegistration(challenge: challenge, rpID: Self.rpID, origin: Self.origin))
    }

    /// The reason of the sign-in failure `mutate` makes of a good assertion by `authenticator`.
    func failure(
        _ ceremonies: PasskeyCeremonies, _ authenticator: inout SoftwareAuthenticator,
        origin: String = origin, _ mutate: (inout AuthenticationResponse) -> Void = { _ in }
    ) async throws -> DomainError {
        let (id, challenge) = try await challenges.issueAuthentication()
        var assertion = authenticator.makeAssertion(challenge: challenge, rpID: Self.rpID, origin: origin)
        mutate(&assertion)
        do {
            _ = try await ceremonies.finishAuthentication(challengeID: id, response: assertion)
        } catch let error as DomainError {
            return error
        }
        XCTFail("the sign-in succeeded")
        return DomainError(.unavailable, "the sign-in succeeded")
    }

    func testAnUnregisteredCredentialIsUnknownCredentialAndAudited() async throws {
        let ceremonies = ceremonies()
        _ = try await register(SoftwareAuthenticator(userHandle: handle.bytes), with: ceremonies)
        var stranger = SoftwareAuthenticator(userHandle: handle.bytes)
        let error = try await failure(ceremonies, &stranger)
        XCTAssertEqual(error.code, .invalidCredentials)
        XCTAssertEqual(error.reason, "unknown_credential")
        XCTAssertEqual(PasskeyCeremonies.unknownCredentialReason, "unknown_credential")
        XCTAssertTrue(
            log.lines.contains { $0.contains("audit.sign_in.failed") && $0.contains("reason=unknown_credential") })
    }

    func testARemovedPasskeyIsUnknownEvenWhenThisReplicaCachedIt() async throws {
        let cache = CredentialCache()
        let ceremonies = ceremonies(cache: cache)
        var authenticator = SoftwareAuthenticator(userHandle: handle.bytes)
        _ = try await register(authenticator, with: ceremonies)
        let (id, challenge) = try await challenges.issueAuthentication()
        _ = try await ceremonies.finishAuthentication(
            challengeID: id,
            response: authenticator.makeAssertion(challenge: challenge, rpID: Self.rpID, origin: Self.origin))
        XCTAssertEqual(cache.count, 1)
        passkeys.state.withLock { $0.credentials.removeAll() }
        let error = try await failure(ceremonies, &authenticator)
        XCTAssertEqual(error.reason, "unknown_credential")
    }

    func testEveryOtherFailureOfAKnownCredentialIsNotUnknown() async throws {
        let ceremonies = ceremonies()
        var authenticator = SoftwareAuthenticator(userHandle: handle.bytes)
        _ = try await register(authenticator, with: ceremonies)
        let cases: [(String, String, (inout AuthenticationResponse) -> Void)] = [
            ("a bad signature", "signature_invalid", { $0.signature[$0.signature.count / 2] ^= 0x01 }),
            (
                "another account's user handle", "user_handle_mismatch",
                { $0.userHandle = Array(repeating: 7, count: 16) }
            ),
            ("no user handle", "user_handle_mismatch", { $0.userHandle = nil }),
            ("tampered authenticator data", "signature_invalid", { $0.authenticatorData[33] ^= 0x01 }),
        ]
        for (name, reason, mutate) in cases {
            let error = try await failure(ceremonies, &authenticator, mutate)
            XCTAssertEqual(error.code, .invalidCredentials, name)
            XCTAssertEqual(error.reason, reason, name)
        }
        let wrongOrigin = try await failure(ceremonies, &authenticator, origin: "https://evil.example")
        XCTAssertEqual(wrongOrigin.reason, "origin_mismatch")
    }

    func testMalformedCredentialIDsAndSpentChallengesAreNeverUnknown() async throws {
        let ceremonies = ceremonies()
        var stranger = SoftwareAuthenticator(userHandle: handle.bytes)
        for credentialID in [[UInt8](), [UInt8](repeating: 1, count: CredentialID.maximumLength + 1)] {
            let error = try await failure(ceremonies, &stranger) { $0.credentialID = credentialID }
            XCTAssertEqual(error.code, .invalidCredentials, "\(credentialID.count) bytes")
            XCTAssertNil(error.reason, "\(credentialID.count) bytes: no authenticator made it, so nothing to forget")
        }
        // An unknown credential on a spent challenge: the challenge decides.
        let (id, challenge) = try await challenges.issueAuthentication()
        _ = try await challenges.consumeAuthentication(challengeID: id)
        do {
            _ = try await ceremonies.finishAuthentication(
                challengeID: id,
                response: stranger.makeAssertion(challenge: challenge, rpID: Self.rpID, origin: Self.origin))
            XCTFail("accepted")
        } catch let error as DomainError {
            XCTAssertEqual(error.code, .challengeUnavailable)
            XCTAssertNil(error.reason)
        }
    }

    func testANewPasskeyIsNamedAfterItsProviderOrPasskey() async throws {
        let shipped = try PasskeyProviderCatalog.shipped.get()
        let naming = ceremonies().naming(with: shipped)
        let google = try await register(
            SoftwareAuthenticator(userHandle: handle.bytes, aaguid: try XCTUnwrap(AAGUID(Self.google))), with: naming)
        XCTAssertEqual(google.name, "Google Password Manager")
        let apple = try await register(
            SoftwareAuthenticator(
                userHandle: handle.bytes, aaguid: try XCTUnwrap(AAGUID("fbfc3007-154e-4ecc-8c0b-6e020557d7bd"))),
            with: naming)
        XCTAssertEqual(apple.name, "Apple Passwords")
        let unlisted = try await register(SoftwareAuthenticator(userHandle: handle.bytes), with: naming)
        XCTAssertEqual(unlisted.name, PasskeyCeremonies.defaultName)
        let none = try await register(
            SoftwareAuthenticator(userHandle: handle.bytes, aaguid: AAGUID(bytes: Array(repeating: 0, count: 16))),
            with: naming)
        XCTAssertEqual(none.name, "Passkey", "the zero AAGUID names nobody")
        // Without a catalog (the default), every passkey gets the default name.
        let plain = try await register(
            SoftwareAuthenticator(userHandle: handle.bytes, aaguid: try XCTUnwrap(AAGUID(Self.google))),
            with: ceremonies())
        XCTAssertEqual(plain.name, "Passkey")
    }
}
