import Foundation
import PasskeyProviders
import WebAuthn
import XCTest

@testable import SoftwareAuthenticator

/// The provider matrix (`ProviderPersona.all`) in process: every persona is named by the shipped AAGUID list, its
/// registration and two sign-ins verify with its own flags, attestation, key and counter, and `docs/webauthn.md`'s
/// "tested providers" table is the one written from the list. The same personas go through the real stack in
/// `Tests/EndToEndTests/ProviderMatrixFlowTests.swift`.
final class ProviderMatrixTests: XCTestCase {
    static let rpID = "example.com"
    static let origin = "https://example.com"
    static let documentURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/webauthn.md")
    static let tableStart = "<!-- tested providers: written from ProviderPersona.all by ProviderMatrixTests -->\n"
    static let tableEnd = "<!-- end of tested providers -->"

    func testTheMatrixHasEveryProviderOfTheIssueOnce() {
        XCTAssertEqual(
            ProviderPersona.all.map(\.provider),
            [
                "iCloud Keychain", "Google Password Manager", "Chrome on Android through hybrid", "Windows Hello",
                "1Password", "Bitwarden", "KeePassXC", "YubiKey 5", "Samsung Pass",
            ])
        XCTAssertTrue(ProviderPersona.all.allSatisfy { !$0.source.isEmpty })
    }

    func testEveryPersonaIsNamedAsTheShippedListNamesItsAAGUID() throws {
        let shipped = try PasskeyProviderCatalog.shipped.get()
        for persona in ProviderPersona.all {
            XCTAssertEqual(shipped.provider(forText: persona.aaguid)?.name, persona.listedName, persona.provider)
        }
    }

    func testEveryPersonaRegistersAndSignsInAsItsProviderDoes() throws {
        let registrations = RegistrationVerifier()
        let authentications = AuthenticationVerifier()
        for persona in ProviderPersona.all {
            var authenticator = persona.authenticator()
            let challenge = Array(repeating: UInt8(7), count: 32)
            let record = try registrations.verify(
                response: persona.registration(
                    authenticator, challenge: challenge, rpID: Self.rpID, origin: Self.origin),
                expectation: RegistrationExpectation(
                    challenge: challenge, relyingPartyID: Self.rpID,
                    origins: OriginPolicy(allowedOrigins: [Self.origin])),
                now: Date())
            XCTAssertEqual(record.aaguid.description, persona.aaguid, persona.provider)
            XCTAssertEqual(record.algorithm, persona.algorithm.rawValue, persona.provider)
            XCTAssertEqual(record.backupEligible, persona.registrationFlags.contains(.backupEligible), persona.provider)
            XCTAssertEqual(record.backedUp, persona.registrationFlags.contains(.backedUp), persona.provider)
            XCTAssertEqual(record.transports, persona.transports, persona.provider)
            XCTAssertEqual(record.clientExtensionOutputs.residentKey, persona.residentKey, persona.provider)
            XCTAssertEqual(record.attestationFormat.rawValue, persona.attestation.format, persona.provider)
            var stored = StoredCredential(
                id: record.credentialID, publicKey: record.publicKey, userHandle: authenticator.userHandle,
                signCount: record.signCount, backupEligible: record.backupEligible)
            for use in 1...2 {
                let assertion = persona.assertion(
                    &authenticator, challenge: challenge, rpID: Self.rpID, origin: Self.origin)
                XCTAssertEqual(assertion.userHandle != nil, persona.returnsUserHandle)
                let result = try authentications.verify(
                    response: assertion,
                    expectation: AuthenticationExpectation(
                        challenge: challenge, relyingPartyID: Self.rpID,
                        origins: OriginPolicy(allowedOrigins: [Self.origin])),
                    credential: stored)
                switch persona.counter {
                case .alwaysZero: XCTAssertEqual(result.newSignCount, 0, persona.provider)
                case .increasing(let start): XCTAssertEqual(result.newSignCount, start + UInt32(use), persona.provider)
                }
                XCTAssertEqual(result.backupEligible, persona.signInFlags.contains(.backupEligible), persona.provider)
                XCTAssertEqual(
                    result.backupEligibilityChanged, use == 1 && persona.registrationFlags != persona.signInFlags,
                    persona.provider)
                stored.signCount = result.newSignCount
                stored.backupEligible = result.backupEligible
            }
        }
    }

    /// A persona whose facts come from a real response is checked against that response, read in place: the
    /// AAGUID, the key's algorithm, UP, UV, BE and BS, a counter's start, the transports and a packed statement's
    /// certificate path.
    func testEveryPersonaTakenFromAVectorMatchesIt() throws {
        let vectors = try TestVectors.load("registrations.json")
        let personas = ProviderPersona.all.filter { $0.vector != nil }
        XCTAssertEqual(personas.map(\.provider), ["Windows Hello", "YubiKey 5"])
        for persona in personas {
            let vector = try XCTUnwrap(vectors.first { $0["name"] as? String == persona.vector }, persona.provider)
            XCTAssertTrue(persona.source.hasPrefix("vector \(persona.vector!) "), persona.provider)
            let decoded = try XCTUnwrap(vector["decoded"] as? [String: Any])
            XCTAssertEqual(decoded["aaguid"] as? String, persona.aaguid, persona.provider)
            XCTAssertEqual(decoded["credentialPublicKeyAlg"] as? Int, persona.algorithm.rawValue, persona.provider)
            let flags = try XCTUnwrap((decoded["flags"] as? String).flatMap { UInt8($0.dropFirst(2), radix: 16) })
            XCTAssertEqual(flags & 0x1D, persona.registrationFlags.rawValue, persona.provider)
            if case .increasing(let start) = persona.counter {
                XCTAssertEqual(decoded["signCount"] as? Int, Int(start), persona.provider)
            }
            let response = try XCTUnwrap(vector["response"] as? [String: Any])
            let transports =
                (response["transports"] ?? (response["response"] as? [String: Any])?["transports"]) as? [String]
            if let transports { XCTAssertEqual(Set(transports), Set(persona.transports), persona.provider) }
            XCTAssertEqual(decoded["fmt"] as? String, persona.attestation.format, persona.provider)
            if persona.attestation != .none {
                XCTAssertTrue((decoded["attStmtKeys"] as? [String])?.contains("x5c") == true, persona.provider)
            }
        }
    }

    /// Windows Hello's `tpm` statement is verified, not carried: an AIK certificate without the AIK usage, or a
    /// statement signed by another key, is refused.
    func testTheTPMStatementIsCheckedNotJustCarried() throws {
        let persona = try XCTUnwrap(ProviderPersona.all.first { $0.attestation == .tpm })
        let authenticator = persona.authenticator()
        let challenge = Array(repeating: UInt8(9), count: 32)
        let expectation = RegistrationExpectation(
            challenge: challenge, relyingPartyID: Self.rpID, origins: OriginPolicy(allowedOrigins: [Self.origin]))
        let issued = Int64(Date().timeIntervalSince1970) - 86_400
        let authority = CertificateAuthority(notBefore: issued)
        let aik = SigningKey(algorithm: .rs256)
        let withoutUsage = authority.issue(
            subject: [], subjectKey: aik, notBefore: issued,
            extensions: [TPMStatement.aikExtensions(manufacturer: "id:4D534654", model: "TPM", version: "id:13")[0]])
        let withUsage = authority.issue(
            subject: [], subjectKey: aik, notBefore: issued,
            extensions: TPMStatement.aikExtensions(manufacturer: "id:4D534654", model: "TPM", version: "id:13"))
        for (attestation, refusal) in [
            (SoftwareAuthenticator.Attestation.tpm(aik: aik, x5c: [withoutUsage]), "no extended key usage"),
            (.tpm(aik: SigningKey(algorithm: .rs256), x5c: [withUsage]), "signature"),
        ] {
            let registration = authenticator.makeRegistration(
                challenge: challenge, rpID: Self.rpID, origin: Self.origin,
                flags: persona.registrationFlags.union(.attestedCredentialData), attestation: attestation)
            XCTAssertThrowsError(
                try RegistrationVerifier().verify(response: registration, expectation: expectation, now: Date()),
                refusal
            ) { XCTAssertTrue(String(describing: $0).contains(refusal), "\($0)") }
        }
        let accepted = authenticator.makeRegistration(
            challenge: challenge, rpID: Self.rpID, origin: Self.origin,
            flags: persona.registrationFlags.union(.attestedCredentialData),
            attestation: .tpm(aik: aik, x5c: [withUsage]))
        XCTAssertEqual(
            try RegistrationVerifier().verify(response: accepted, expectation: expectation, now: Date())
                .attestationFormat, .tpm)
    }

    func testTheDocumentsTableIsWrittenFromTheList() throws {
        let text = try String(contentsOf: Self.documentURL, encoding: .utf8)
        let table = ProviderPersona.markdownTable()
        guard let start = text.range(of: Self.tableStart), let end = text.range(of: Self.tableEnd),
            start.upperBound <= end.lowerBound
        else { return XCTFail("docs/webauthn.md has no tested providers section between its markers") }
        let current = String(text[start.upperBound..<end.lowerBound])
        if current != table, ProcessInfo.processInfo.environment["PASSKEY_WRITE_PROVIDER_TABLE"] == "1" {
            try (text[..<start.upperBound] + table + text[end.lowerBound...]).write(
                to: Self.documentURL, atomically: true, encoding: .utf8)
            return
        }
        XCTAssertEqual(
            current, table,
            "docs/webauthn.md's tested providers table is not the list's: run this test with PASSKEY_WRITE_PROVIDER_TABLE=1"
        )
    }
}
