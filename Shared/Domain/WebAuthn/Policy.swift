import Crypto

/// Which origins a ceremony may come from.
public struct OriginPolicy: Sendable {
    /// Exact origins accepted: web origins ("https://example.com") and app origins
    /// ("android:apk-key-hash:…", "ios:bundle-id:…").
    public var allowedOrigins: [String]
    /// Whether a ceremony run inside a cross-origin iframe is accepted (default: no).
    public var allowCrossOrigin: Bool
    /// When cross-origin use is allowed: the accepted top-level origins (nil accepts any).
    public var allowedTopOrigins: [String]?

    /// Origins accepted exactly as listed; cross-origin use is rejected unless allowed.
    public init(allowedOrigins: [String], allowCrossOrigin: Bool = false, allowedTopOrigins: [String]? = nil) {
        self.allowedOrigins = allowedOrigins
        self.allowCrossOrigin = allowCrossOrigin
        self.allowedTopOrigins = allowedTopOrigins
    }
}

/// The relying party's user verification requirement.
public enum UserVerificationRequirement: String, Sendable {
    case required, preferred, discouraged
}

/// How a registration challenge was issued.
public enum RegistrationMediation: Sendable {
    /// An ordinary, user-visible create call: user presence is required.
    case modal
    /// A conditional create (Automatic Passkey Upgrade): the authenticator may leave UP unset. The caller decides
    /// this from what it stored when it issued the challenge, never from the client's request.
    case conditional
}

/// What the relying party expects of one registration: the facts it stored when it issued the challenge.
public struct RegistrationExpectation: Sendable {
    /// The challenge bytes that were issued.
    public var challenge: [UInt8]
    /// The relying party ID.
    public var relyingPartyID: String {
        didSet { relyingPartyIDHash = sha256(Array(relyingPartyID.utf8)) }
    }
    /// SHA-256 of `relyingPartyID`, computed once.
    public private(set) var relyingPartyIDHash: [UInt8]
    /// Accepted origins and cross-origin rules.
    public var origins: OriginPolicy
    /// Whether UV must be set.
    public var userVerification: UserVerificationRequirement
    /// How the challenge was issued.
    public var mediation: RegistrationMediation
    /// COSE algorithms offered in `pubKeyCredParams`.
    public var allowedAlgorithms: [Int]

    /// An expectation; by default UV is preferred, the create call was modal and the usual algorithms were offered.
    public init(
        challenge: [UInt8], relyingPartyID: String, origins: OriginPolicy,
        userVerification: UserVerificationRequirement = CeremonyOptions.standard.registrationUserVerification,
        mediation: RegistrationMediation = .modal, allowedAlgorithms: [Int] = CeremonyOptions.standard.algorithms
    ) {
        self.challenge = challenge
        self.relyingPartyID = relyingPartyID
        self.relyingPartyIDHash = sha256(Array(relyingPartyID.utf8))
        self.origins = origins
        self.userVerification = userVerification
        self.mediation = mediation
        self.allowedAlgorithms = allowedAlgorithms
    }
}

/// Registration rules that do not change per challenge.
public struct RegistrationPolicy: Sendable {
    /// How old an android-safetynet attestation's timestamp may be, in seconds.
    public var safetyNetMaximumAge: Double
    /// How far in the future an android-safetynet timestamp may be, in seconds (clock skew).
    public var safetyNetAllowedClockSkew: Double
    /// Whether android-key attestation must show the key in a trusted execution environment (teeEnforced only).
    public var androidKeyRequiresTrustedEnvironment: Bool

    /// A policy; the defaults accept a SafetyNet timestamp up to 60 s old and 10 s ahead.
    public init(
        safetyNetMaximumAge: Double = 60, safetyNetAllowedClockSkew: Double = 10,
        androidKeyRequiresTrustedEnvironment: Bool = false
    ) {
        self.safetyNetMaximumAge = safetyNetMaximumAge
        self.safetyNetAllowedClockSkew = safetyNetAllowedClockSkew
        self.androidKeyRequiresTrustedEnvironment = androidKeyRequiresTrustedEnvironment
    }
}

/// What the relying party expects of one authentication: the facts it stored when it issued the challenge.
public struct AuthenticationExpectation: Sendable {
    /// The challenge bytes that were issued.
    public var challenge: [UInt8]
    /// The relying party ID.
    public var relyingPartyID: String {
        didSet { relyingPartyIDHash = sha256(Array(relyingPartyID.utf8)) }
    }
    /// SHA-256 of `relyingPartyID`, computed once.
    public private(set) var relyingPartyIDHash: [UInt8]
    /// Accepted origins and cross-origin rules.
    public var origins: OriginPolicy
    /// Whether UV must be set.
    public var userVerification: UserVerificationRequirement
    /// The `allowCredentials` list the challenge was issued with. Empty means discoverable sign-in, in which case
    /// the response must carry a userHandle.
    public var allowedCredentialIDs: [[UInt8]]

    /// An expectation; an empty `allowedCredentialIDs` means discoverable sign-in.
    public init(
        challenge: [UInt8], relyingPartyID: String, origins: OriginPolicy,
        userVerification: UserVerificationRequirement = .preferred, allowedCredentialIDs: [[UInt8]] = []
    ) {
        self.challenge = challenge
        self.relyingPartyID = relyingPartyID
        self.relyingPartyIDHash = sha256(Array(relyingPartyID.utf8))
        self.origins = origins
        self.userVerification = userVerification
        self.allowedCredentialIDs = allowedCredentialIDs
    }
}

/// What to do when the signature counter did not increase.
public enum SignCountPolicy: Sendable {
    /// Reject the assertion with `sign_count_regressed` (default).
    case reject
    /// Accept it and report the credential as possibly cloned.
    case acceptAndFlag
}

/// What to do when an assertion's BE flag differs from the one stored for the credential.
///
/// WebAuthn Level 3 §6.1.3 says backup eligibility is fixed when the credential is made, and §7.2 has a relying
/// party that uses the backup state compare it with the stored value. Deployed providers change it all the same
/// (KeePassXC from 2.7.12, iCloud Keychain passkeys made before sync finished, passkeys moved between password
/// managers), and the signature proves possession of the key whatever the flag says.
public enum BackupEligibilityChangePolicy: String, Sendable, CaseIterable {
    /// Accept the assertion when every other check passes and report the new BE (and BS) to store.
    case update
    /// Refuse it with `backup_state_invalid`: §7.2's comparison read strictly.
    case reject
}

/// Authentication rules that do not change per challenge.
public struct AuthenticationPolicy: Sendable {
    /// Counter handling.
    public var signCount: SignCountPolicy
    /// A BE flag that differs from the stored one. BS set without BE is refused whatever this says.
    public var backupEligibilityChange: BackupEligibilityChangePolicy

    /// A policy; by default a counter that did not increase is rejected and a changed BE is accepted and reported.
    public init(signCount: SignCountPolicy = .reject, backupEligibilityChange: BackupEligibilityChangePolicy = .update)
    {
        self.signCount = signCount
        self.backupEligibilityChange = backupEligibilityChange
    }
}

/// A stored credential, as the verification of an assertion needs it.
public struct StoredCredential: Sendable {
    /// The credential ID.
    public var id: [UInt8]
    /// The parsed public key (parse once from the stored COSE bytes and cache).
    public var publicKey: CredentialPublicKey
    /// The user handle of the account the credential belongs to.
    public var userHandle: [UInt8]
    /// The last sign count stored.
    public var signCount: UInt32
    /// The BE flag stored for the credential (at registration, or by the last sign-in that changed it).
    public var backupEligible: Bool

    /// A stored credential as loaded from the database.
    public init(
        id: [UInt8], publicKey: CredentialPublicKey, userHandle: [UInt8], signCount: UInt32, backupEligible: Bool
    ) {
        self.id = id
        self.publicKey = publicKey
        self.userHandle = userHandle
        self.signCount = signCount
        self.backupEligible = backupEligible
    }
}

/// `residentKey` of `authenticatorSelection` (WebAuthn §5.4.6).
public enum ResidentKeyRequirement: String, Sendable, CaseIterable {
    case required, preferred, discouraged
}

/// `attestation` conveyance (WebAuthn §5.4.7).
public enum AttestationConveyance: String, Sendable, CaseIterable {
    case none, indirect, direct, enterprise
}

/// `hints` of the options (WebAuthn §5.8.7), in order of preference.
public enum CredentialHint: String, Sendable, CaseIterable {
    case securityKey = "security-key"
    case clientDevice = "client-device"
    case hybrid
}

/// What this relying party asks of passkeys and checks when they are registered and used: the algorithms offered in
/// `pubKeyCredParams` (and the only ones a registration may use), user verification for each ceremony, resident
/// keys, hints and attestation conveyance. The options that start a ceremony and the verifier that finishes it read
/// this one value, so they cannot disagree.
public struct CeremonyOptions: Sendable, Equatable {
    /// COSE algorithms in order of preference: offered in `pubKeyCredParams`, and the only ones a registration may
    /// use (§7.1 step 20).
    public var algorithms: [Int]
    /// `authenticatorSelection.userVerification` of creation options, enforced at registration.
    public var registrationUserVerification: UserVerificationRequirement
    /// The same for a conditional registration (the Automatic Passkey Upgrade).
    public var conditionalRegistrationUserVerification: UserVerificationRequirement

    /// What a registration of `mediation` offers and enforces.
    public func registrationUserVerification(for mediation: RegistrationMediation) -> UserVerificationRequirement {
        mediation == .conditional ? conditionalRegistrationUserVerification : registrationUserVerification
    }
    /// `userVerification` of request options, enforced at sign-in.
    public var authenticationUserVerification: UserVerificationRequirement
    /// `authenticatorSelection.residentKey` (and `requireResidentKey` when `required`).
    public var residentKey: ResidentKeyRequirement
    /// `hints` of both kinds of options; empty leaves the choice to the client.
    public var hints: [CredentialHint]
    /// `attestation` conveyance. The verifier checks any statement an authenticator sends whatever this says.
    public var attestation: AttestationConveyance

    public init(
        algorithms: [Int], registrationUserVerification: UserVerificationRequirement,
        conditionalRegistrationUserVerification: UserVerificationRequirement? = nil,
        authenticationUserVerification: UserVerificationRequirement, residentKey: ResidentKeyRequirement,
        hints: [CredentialHint] = [], attestation: AttestationConveyance
    ) {
        self.algorithms = algorithms
        self.registrationUserVerification = registrationUserVerification
        self.conditionalRegistrationUserVerification =
            conditionalRegistrationUserVerification ?? registrationUserVerification
        self.authenticationUserVerification = authenticationUserVerification
        self.residentKey = residentKey
        self.hints = hints
        self.attestation = attestation
    }

    /// Why a list of COSE algorithms cannot be offered, or nil when it can: every entry must be one this verifier
    /// implements on this OpenSSL, none twice, at least one.
    public static func problem(withAlgorithms algorithms: [Int]) -> String? {
        guard !algorithms.isEmpty else { return "at least one COSE algorithm is required" }
        var seen: Set<Int> = []
        for algorithm in algorithms {
            guard COSEAlgorithm.credentialAlgorithms.contains(algorithm) else {
                let supported = COSEAlgorithm.credentialAlgorithms.map(String.init).joined(separator: ", ")
                return "\(algorithm) is not a supported COSE algorithm (supported: \(supported))"
            }
            guard seen.insert(algorithm).inserted else { return "\(algorithm) is listed twice" }
        }
        return nil
    }

    /// ES256 first (every platform authenticator), then EdDSA and RS256 (Windows Hello), then the rest the verifier
    /// supports except RS1 (SHA-1: offered only when configured); user verification preferred for both ceremonies
    /// (required would lock out security keys without a PIN); discoverable credentials required; no hints; no
    /// attestation asked for.
    public static let standard = CeremonyOptions(
        algorithms: [-7, -8, -257] + COSEAlgorithm.defaultAllowed.filter { ![-7, -8, -257].contains($0) },
        registrationUserVerification: .preferred, authenticationUserVerification: .preferred, residentKey: .required,
        hints: [], attestation: .none)
}
