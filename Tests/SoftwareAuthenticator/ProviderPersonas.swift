import Foundation
import WebAuthn

/// A passkey provider as a relying party sees it, for tests that sign up, sign in and add passkeys the way that
/// provider does: its AAGUID, flags, attestation, algorithm, transports, attachment, `credProps`, counter and user
/// handle, each fact taken from a real response in `../shared/vectors` or from the provider's documentation, named in
/// `source`. The list is the provider matrix of `docs/webauthn.md`, whose table is written from it.
public struct ProviderPersona: Sendable {
    /// How the signature counter moves.
    public enum Counter: Sendable {
        /// Always 0, as synced passkeys report it.
        case alwaysZero
        /// Starts at `start` and grows with every assertion.
        case increasing(start: UInt32)
    }

    /// The attestation statement the registration carries.
    public enum AttestationKind: Sendable, Equatable {
        /// `none`: what a synced provider sends, and what a browser delivers when the options ask for none.
        case none
        /// `packed` with an `x5c` path from the provider's attestation CA (here a test CA).
        case packedWithCertificate
        /// `tpm`: a TPM 2.0 certify structure signed by an attestation identity key, whose certificate (empty
        /// subject, the TPM in its subject alternative name, the AIK usage) a test CA issued.
        case tpm

        /// The `fmt` the registration carries.
        public var format: String {
            switch self {
            case .none: "none"
            case .packedWithCertificate: "packed"
            case .tpm: "tpm"
            }
        }
    }

    /// The provider, as people know it.
    public let provider: String
    /// Its AAGUID, lowercase.
    public let aaguid: String
    /// The name the shipped AAGUID list gives it (what `GET /v1/passkeys` shows); nil when the list does not have it.
    public let listedName: String?
    /// UP, UV, BE and BS at registration (AT is added).
    public let registrationFlags: AuthenticatorData.Flags
    /// UP, UV, BE and BS at sign-in.
    public let signInFlags: AuthenticatorData.Flags
    public let attestation: AttestationKind
    public let algorithm: COSEAlgorithm
    /// `response.transports` of the registration.
    public let transports: [String]
    /// `authenticatorAttachment`: `platform` or `cross-platform`.
    public let authenticatorAttachment: String
    /// `clientExtensionResults.credProps.rk`; nil when the client reports no `credProps`.
    public let residentKey: Bool?
    public let counter: Counter
    /// Whether assertions carry `userHandle` (a discoverable sign-in needs it).
    public let returnsUserHandle: Bool
    /// Where the facts come from.
    public let source: String
    /// The registration vector of `../shared/vectors` the facts were read from, when there is one; the tests check
    /// the persona against it.
    public var vector: String? = nil

    /// A software authenticator holding a new credential of this provider's algorithm, AAGUID and counter.
    public func authenticator() -> SoftwareAuthenticator {
        switch counter {
        case .alwaysZero:
            return SoftwareAuthenticator(
                algorithm: algorithm, aaguid: AAGUID(aaguid)!, signCount: 0, keepsZeroCounter: true)
        case .increasing(let start):
            return SoftwareAuthenticator(algorithm: algorithm, aaguid: AAGUID(aaguid)!, signCount: start)
        }
    }

    /// The registration's attestation for `authenticator`: for `packed`, a statement signed by an attestation key
    /// whose certificate (subject as §8.2.1 requires, the AAGUID extension) a test CA issued at `now`.
    public func attestationStatement(for authenticator: SoftwareAuthenticator, now: Date = Date())
        -> SoftwareAuthenticator.Attestation
    {
        switch attestation {
        case .none:
            return .none
        case .packedWithCertificate:
            let issued = Int64(now.timeIntervalSince1970) - 86_400
            let authority = CertificateAuthority(commonName: "\(provider) Attestation Root", notBefore: issued)
            let key = SigningKey(algorithm: .es256)
            let leaf = authority.issue(
                subject: [
                    ("C", "SE"), ("O", "\(provider) maker"), ("OU", "Authenticator Attestation"),
                    ("CN", "\(provider) attestation"),
                ],
                subjectKey: key, notBefore: issued,
                extensions: [CertificateAuthority.aaguidExtension(authenticator.aaguid)])
            return .packed(key: key, x5c: [leaf])
        case .tpm:
            let issued = Int64(now.timeIntervalSince1970) - 86_400
            let authority = CertificateAuthority(commonName: "\(provider) TPM Root", notBefore: issued)
            let aik = SigningKey(algorithm: .rs256)
            let certificate = authority.issue(
                subject: [], subjectKey: aik, notBefore: issued,
                extensions: TPMStatement.aikExtensions(manufacturer: "id:4D534654", model: "TPM", version: "id:13")
                    + [CertificateAuthority.aaguidExtension(authenticator.aaguid)])
            return .tpm(aik: aik, x5c: [certificate])
        }
    }

    /// `clientExtensionResults` as the client returns it.
    public var clientExtensionResultsJSON: String {
        residentKey.map { "{\"credProps\":{\"rk\":\($0)}}" } ?? "{}"
    }

    /// A registration of `authenticator` as this provider makes it.
    public func registration(
        _ authenticator: SoftwareAuthenticator, challenge: [UInt8], rpID: String, origin: String
    ) -> RegistrationResponse {
        authenticator.makeRegistration(
            challenge: challenge, rpID: rpID, origin: origin, flags: registrationFlags.union(.attestedCredentialData),
            attestation: attestationStatement(for: authenticator), transports: transports,
            clientExtensionResultsJSON: clientExtensionResultsJSON)
    }

    /// An assertion of `authenticator` as this provider makes it (the counter moves as `counter` says).
    public func assertion(
        _ authenticator: inout SoftwareAuthenticator, challenge: [UInt8], rpID: String, origin: String
    ) -> AuthenticationResponse {
        authenticator.makeAssertion(
            challenge: challenge, rpID: rpID, origin: origin, flags: signInFlags, includeUserHandle: returnsUserHandle)
    }

    private static let synced: AuthenticatorData.Flags = [.userPresent, .userVerified, .backupEligible, .backedUp]
    private static let deviceBound: AuthenticatorData.Flags = [.userPresent, .userVerified]

    /// The provider matrix.
    public static let all: [ProviderPersona] = [
        ProviderPersona(
            provider: "iCloud Keychain", aaguid: "fbfc3007-154e-4ecc-8c0b-6e020557d7bd", listedName: "Apple Passwords",
            registrationFlags: synced, signInFlags: synced, attestation: .none, algorithm: .es256,
            transports: ["hybrid", "internal"], authenticatorAttachment: "platform", residentKey: true,
            counter: .alwaysZero, returnsUserHandle: true,
            source: "Apple, Supporting passkeys (developer.apple.com); AAGUID: the shipped list"),
        ProviderPersona(
            provider: "Google Password Manager", aaguid: "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4",
            listedName: "Google Password Manager", registrationFlags: synced, signInFlags: synced, attestation: .none,
            algorithm: .es256, transports: ["hybrid", "internal"], authenticatorAttachment: "platform",
            residentKey: true, counter: .alwaysZero, returnsUserHandle: true,
            source:
                "Google, Passkeys developer guide (developers.google.com/identity/passkeys); AAGUID: the shipped list"),
        ProviderPersona(
            provider: "Chrome on Android through hybrid", aaguid: "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4",
            listedName: "Google Password Manager", registrationFlags: synced, signInFlags: synced, attestation: .none,
            algorithm: .es256, transports: ["hybrid", "internal"], authenticatorAttachment: "cross-platform",
            residentKey: true, counter: .alwaysZero, returnsUserHandle: true,
            source:
                "CTAP 2.2 hybrid transport as Chrome reports it (cross-platform attachment); the phone's provider is Google Password Manager"
        ),
        ProviderPersona(
            provider: "Windows Hello", aaguid: "08987058-cadc-4b81-b6e1-30de50dcbe96", listedName: "Windows Hello",
            registrationFlags: deviceBound, signInFlags: deviceBound, attestation: .tpm, algorithm: .rs256,
            transports: ["internal"], authenticatorAttachment: "platform", residentKey: true,
            counter: .increasing(start: 0), returnsUserHandle: true,
            source:
                "vector tpm-surface-pro-4-sha1 (AAGUID, UP UV without BE, RS256 key, tpm statement with an AIK certificate, counter 0 at registration; the AIK here is a test CA's); Microsoft Learn, Windows passkeys",
            vector: "tpm-surface-pro-4-sha1"
        ),
        ProviderPersona(
            provider: "1Password", aaguid: "bada5566-a7aa-401f-bd96-45619a55120d", listedName: "1Password",
            registrationFlags: synced, signInFlags: synced, attestation: .none, algorithm: .es256,
            transports: ["internal", "hybrid"], authenticatorAttachment: "platform", residentKey: true,
            counter: .alwaysZero, returnsUserHandle: true,
            source: "1Password developer documentation, passkeys; AAGUID: the shipped list"),
        ProviderPersona(
            provider: "Bitwarden", aaguid: "d548826e-79b4-db40-a3d8-11116f7e8349", listedName: "Bitwarden",
            registrationFlags: synced, signInFlags: synced, attestation: .none, algorithm: .es256,
            transports: ["internal"], authenticatorAttachment: "platform", residentKey: true, counter: .alwaysZero,
            returnsUserHandle: true, source: "Bitwarden help, Storing passkeys; AAGUID: the shipped list"),
        ProviderPersona(
            provider: "KeePassXC", aaguid: "fdb141b2-5d84-443e-8a35-4698c205a502", listedName: "KeePassXC",
            registrationFlags: deviceBound, signInFlags: synced, attestation: .none, algorithm: .es256,
            transports: ["internal"], authenticatorAttachment: "platform", residentKey: true, counter: .alwaysZero,
            returnsUserHandle: true,
            source:
                "keepassxreboot/keepassxc #13239 (BE = 0 before 2.7.12, BE = 1 since: registered before, signing in after the upgrade); AAGUID: the shipped list"
        ),
        ProviderPersona(
            provider: "YubiKey 5", aaguid: "6d44ba9b-f6ec-2e49-b930-0c8fe920cb73", listedName: nil,
            registrationFlags: deviceBound, signInFlags: deviceBound, attestation: .packedWithCertificate,
            algorithm: .es256, transports: ["nfc", "usb"], authenticatorAttachment: "cross-platform",
            residentKey: true, counter: .increasing(start: 52), returnsUserHandle: true,
            source:
                "vector packed-yubikey-firefox (AAGUID, packed with x5c, ES256, UP UV without BE, counter 52, transports nfc and usb); Yubico, YubiKey 5 technical manual (discoverable credentials)",
            vector: "packed-yubikey-firefox"
        ),
        ProviderPersona(
            provider: "Samsung Pass", aaguid: "53414d53-554e-4700-0000-000000000000", listedName: "Samsung Pass",
            registrationFlags: synced, signInFlags: synced, attestation: .none, algorithm: .es256,
            transports: ["internal", "hybrid"], authenticatorAttachment: "platform", residentKey: true,
            counter: .alwaysZero, returnsUserHandle: true,
            source: "Samsung, Samsung Pass passkeys; AAGUID: the shipped list"),
    ]

    /// The flags as text: `UP UV BE BS`, the ones set.
    public static func text(_ flags: AuthenticatorData.Flags) -> String {
        [
            (AuthenticatorData.Flags.userPresent, "UP"), (.userVerified, "UV"), (.backupEligible, "BE"),
            (.backedUp, "BS"),
        ]
        .filter { flags.contains($0.0) }.map(\.1).joined(separator: " ")
    }

    /// The "tested providers" table of `docs/webauthn.md`, one row per persona.
    public static func markdownTable() -> String {
        var lines = [
            "| provider | AAGUID | shown as | flags at sign-up → sign-in | attestation, key | transports, attachment | credProps rk | counter | userHandle | source |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for persona in all {
            let flags =
                persona.registrationFlags == persona.signInFlags
                ? text(persona.registrationFlags) : "\(text(persona.registrationFlags)) → \(text(persona.signInFlags))"
            let attestation: String
            switch persona.attestation {
            case .none: attestation = "none"
            case .packedWithCertificate: attestation = "packed with x5c"
            case .tpm: attestation = "tpm with an AIK certificate"
            }
            let counter: String
            switch persona.counter {
            case .alwaysZero: counter = "always 0"
            case .increasing(let start): counter = "increasing from \(start)"
            }
            let cells = [
                persona.provider, "`\(persona.aaguid)`",
                persona.listedName ?? "Passkey (not in the shipped list)", flags,
                "\(attestation), \(String(describing: persona.algorithm).uppercased())",
                "\(persona.transports.joined(separator: ", ")); \(persona.authenticatorAttachment)",
                persona.residentKey.map { String($0) } ?? "not reported", counter,
                persona.returnsUserHandle ? "yes" : "no", persona.source,
            ]
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
