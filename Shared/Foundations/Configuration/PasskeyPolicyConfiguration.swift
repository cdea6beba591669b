import Encoding
import Foundation

/// The WebAuthn policy a deployment sets (docs/configuration.md, "WebAuthn policy"): what the options ask for and
/// what verification then enforces. Read once, by every executable, from the same variables; the gateway offers it
/// and verification-service enforces it, so both must see the same values (one `passkey.env`).
///
/// Plain values only: which COSE algorithms this build can verify is the WebAuthn module's to say, and the
/// executables that offer or verify check `algorithms` against it at start (a bad value still names the variable).
public struct PasskeyPolicyConfiguration: Sendable, Equatable {
    /// `required`, `preferred` or `discouraged`: user verification and resident keys.
    public enum Requirement: String, Sendable, Equatable, CaseIterable {
        case required, preferred, discouraged
    }

    /// Attestation conveyance.
    public enum Conveyance: String, Sendable, Equatable, CaseIterable {
        case none, indirect, direct, enterprise
    }

    /// What a sign count that did not increase does: refuse the sign-in, or accept it and flag the passkey.
    public enum SignCountHandling: String, Sendable, Equatable, CaseIterable {
        case reject, flag
    }

    /// The hints a relying party may give (WebAuthn §5.8.7).
    public static let knownHints = ["security-key", "client-device", "hybrid"]

    /// COSE algorithm identifiers in order of preference (`PASSKEY_ALGORITHMS`); nil: the verifier's standard list.
    public var algorithms: [Int]?
    public var registrationUserVerification: Requirement
    /// What a conditional registration (the Automatic Passkey Upgrade) offers and enforces: the configured
    /// `PASSKEY_REGISTRATION_USER_VERIFICATION` when it is set, else `preferred`, as before UV became required by
    /// default: the upgrade's rules do not change with the default.
    public var conditionalRegistrationUserVerification: Requirement
    public var authenticationUserVerification: Requirement
    public var residentKey: Requirement
    /// Hints in order of preference; empty gives none.
    public var hints: [String]
    public var attestation: Conveyance
    /// AAGUIDs (16 bytes each) that alone may register; nil: any.
    public var allowedAAGUIDs: [[UInt8]]?
    /// AAGUIDs that may never register.
    public var deniedAAGUIDs: [[UInt8]]
    /// Top-level origins a ceremony embedded in a cross-origin frame may run under; empty refuses every embedded
    /// ceremony (a `crossOrigin: true` or any `topOrigin` in client data).
    public var topOrigins: [String]
    public var signCount: SignCountHandling
    /// The FIDO metadata BLOB file and the PEM file of the root its signer must chain to (both or neither), and
    /// how often verification-service reads them again (seconds).
    public var metadataBLOBPath: String?
    public var metadataRootPath: String?
    public var metadataReloadInterval: Double = 3600

    /// The defaults: the standard algorithms, UV required for both ceremonies (preferred for the conditional
    /// registration), resident keys required, no hints,
    /// no attestation asked for, every authenticator model, no embedded ceremonies, a regressed counter refused.
    public init(
        algorithms: [Int]? = nil, registrationUserVerification: Requirement = .required,
        conditionalRegistrationUserVerification: Requirement = .preferred,
        authenticationUserVerification: Requirement = .required, residentKey: Requirement = .required,
        hints: [String] = [], attestation: Conveyance = .none, allowedAAGUIDs: [[UInt8]]? = nil,
        deniedAAGUIDs: [[UInt8]] = [], topOrigins: [String] = [], signCount: SignCountHandling = .reject
    ) {
        self.algorithms = algorithms
        self.registrationUserVerification = registrationUserVerification
        self.conditionalRegistrationUserVerification = conditionalRegistrationUserVerification
        self.authenticationUserVerification = authenticationUserVerification
        self.residentKey = residentKey
        self.hints = hints
        self.attestation = attestation
        self.allowedAAGUIDs = allowedAAGUIDs
        self.deniedAAGUIDs = deniedAAGUIDs
        self.topOrigins = topOrigins
        self.signCount = signCount
    }

    /// Reads and validates the policy variables. Throws `ConfigurationError` naming the first bad one.
    public init(_ env: EnvironmentReader) throws {
        self.init()
        if env.raw("PASSKEY_ALGORITHMS") != nil {
            let entries = env.list("PASSKEY_ALGORITHMS")
            guard !entries.isEmpty, entries.count <= 32 else {
                throw ConfigurationError(
                    variable: "PASSKEY_ALGORITHMS",
                    problem: "expected 1 to 32 COSE algorithm identifiers like -7,-8,-257")
            }
            algorithms = try entries.map { entry in
                guard let value = Int(entry), (-70_000...70_000).contains(value) else {
                    throw ConfigurationError(
                        variable: "PASSKEY_ALGORITHMS",
                        problem: "expected COSE algorithm identifiers like -7,-8,-257, got \(entry)")
                }
                return value
            }
        }
        // Required by default: once the password goes, a passkey that signs in without UV is possession alone.
        // `preferred` is the documented opt-out for security keys without a PIN.
        registrationUserVerification = try env.requirement(
            "PASSKEY_REGISTRATION_USER_VERIFICATION", default: .required)
        conditionalRegistrationUserVerification =
            env.raw("PASSKEY_REGISTRATION_USER_VERIFICATION") == nil ? .preferred : registrationUserVerification
        authenticationUserVerification = try env.requirement(
            "PASSKEY_AUTHENTICATION_USER_VERIFICATION", default: .required)
        residentKey = try env.requirement("PASSKEY_RESIDENT_KEY", default: .required)
        hints = env.list("PASSKEY_HINTS")
        for hint in hints where !Self.knownHints.contains(hint) {
            throw ConfigurationError(
                variable: "PASSKEY_HINTS",
                problem: "expected a list of \(Self.knownHints.joined(separator: ", ")), got \(hint)")
        }
        guard Set(hints).count == hints.count else {
            throw ConfigurationError(variable: "PASSKEY_HINTS", problem: "a hint is listed twice")
        }
        attestation = try env.conveyance("PASSKEY_ATTESTATION", default: .none)
        if env.raw("PASSKEY_AAGUID_ALLOW") != nil {
            allowedAAGUIDs = try env.aaguids("PASSKEY_AAGUID_ALLOW")
        }
        deniedAAGUIDs = try env.aaguids("PASSKEY_AAGUID_DENY")
        topOrigins = try env.webOrigins("PASSKEY_TOP_ORIGINS") {
            "\($0) is not a web origin (https://host[:port], or http://localhost[:port])"
        }
        signCount = try env.signCountHandling("PASSKEY_SIGN_COUNT", default: .reject)
        metadataBLOBPath = env.raw("PASSKEY_MDS_BLOB")
        metadataRootPath = env.raw("PASSKEY_MDS_ROOT")
        guard (metadataBLOBPath == nil) == (metadataRootPath == nil) else {
            throw ConfigurationError(
                variable: metadataBLOBPath == nil ? "PASSKEY_MDS_BLOB" : "PASSKEY_MDS_ROOT",
                problem: "PASSKEY_MDS_BLOB and PASSKEY_MDS_ROOT must be set together")
        }
        metadataReloadInterval = try env.duration("PASSKEY_MDS_RELOAD_INTERVAL", default: "1h")
    }
}

extension EnvironmentReader {
    /// `required`, `preferred` or `discouraged`.
    func requirement(
        _ name: String, default defaultValue: PasskeyPolicyConfiguration.Requirement
    ) throws -> PasskeyPolicyConfiguration.Requirement {
        try oneOf(name, defaultValue)
    }

    /// `none`, `indirect`, `direct` or `enterprise`.
    func conveyance(
        _ name: String, default defaultValue: PasskeyPolicyConfiguration.Conveyance
    ) throws -> PasskeyPolicyConfiguration.Conveyance {
        try oneOf(name, defaultValue)
    }

    /// `reject` or `flag`.
    func signCountHandling(
        _ name: String, default defaultValue: PasskeyPolicyConfiguration.SignCountHandling
    ) throws -> PasskeyPolicyConfiguration.SignCountHandling {
        try oneOf(name, defaultValue)
    }

    /// One of `Value`'s raw values, exactly.
    private func oneOf<Value: RawRepresentable & CaseIterable>(_ variable: String, _ defaultValue: Value) throws
        -> Value
    where Value.RawValue == String {
        guard let text = raw(variable) else { return defaultValue }
        guard let value = Value(rawValue: text) else {
            let expected = Value.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationError(variable: variable, problem: "expected one of \(expected), got \(text)")
        }
        return value
    }

    /// A list of AAGUIDs in the 8-4-4-4-12 hex form (any case), at most 1000.
    func aaguids(_ name: String) throws -> [[UInt8]] {
        let entries = list(name)
        guard entries.count <= 1000 else {
            throw ConfigurationError(variable: name, problem: "at most 1000 AAGUIDs, got \(entries.count)")
        }
        guard raw(name) == nil || !entries.isEmpty else {
            throw ConfigurationError(
                variable: name, problem: "expected AAGUIDs like 08987058-cadc-4b81-b6e1-30de50dcbe96")
        }
        return try entries.map { entry in
            guard let uuid = UUID(text: entry) else {
                throw ConfigurationError(
                    variable: name, problem: "expected AAGUIDs like 08987058-cadc-4b81-b6e1-30de50dcbe96, got \(entry)")
            }
            return withUnsafeBytes(of: uuid.uuid) { Array($0) }
        }
    }
}
