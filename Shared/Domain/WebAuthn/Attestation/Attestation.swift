import Crypto
import Foundation

/// Attestation statement formats (IANA "WebAuthn Attestation Statement Format Identifiers").
public enum AttestationFormat: String, Sendable, Hashable, CaseIterable {
    case none
    case packed
    case fidoU2F = "fido-u2f"
    case apple
    case androidKey = "android-key"
    case androidSafetyNet = "android-safetynet"
    case tpm
    case compound
}

/// The kind of attestation a statement turned out to be (WebAuthn §6.5.3).
public enum AttestationType: String, Sendable, Hashable {
    case none
    case `self`
    case basic
    case attestationCA = "attca"
    case anonymizationCA = "anonca"
    /// Several statements (compound format), each with its own type.
    case compound
}

/// What the trust assessment concluded.
public enum AttestationTrustResult: String, Sendable, Hashable {
    /// No certificate path to assess (none or self attestation), accepted by policy.
    case notApplicable = "not_applicable"
    /// The certificate path chains to a configured root at the verification time.
    case trusted
    /// No root is configured for this format or AAGUID; the statement's signature was verified, its certificates
    /// were not chained. Accepted only when `AttestationTrust.requireTrustedAttestation` is false.
    case unverified
}

/// Which attestations the relying party trusts.
public struct AttestationTrust: Sendable {
    /// Root certificates per attestation format.
    public var rootsByFormat: [AttestationFormat: [Certificate]]
    /// Root certificates per authenticator model; these take precedence over `rootsByFormat`.
    public var rootsByAAGUID: [AAGUID: [Certificate]]
    /// When set, only these authenticator models may register.
    public var allowedAAGUIDs: Set<AAGUID>?
    /// Authenticator models that may never register (checked before the allow-list).
    public var deniedAAGUIDs: Set<AAGUID>
    /// Models a metadata BLOB reports compromised, with the status that refuses them (`MetadataBLOB.refusedAAGUIDs`).
    public var refusedAAGUIDs: [AAGUID: String] = [:]
    /// Whether `none` attestation is accepted (default yes: consumer passkeys).
    public var acceptNoneAttestation: Bool
    /// Whether self attestation is accepted (default yes).
    public var acceptSelfAttestation: Bool
    /// Whether a certificate path must chain to a configured root. When false (default), a path with no root
    /// configured for it is accepted with trust result `unverified`; a path that has roots must chain to them.
    public var requireTrustedAttestation: Bool

    /// A trust configuration; the defaults accept none and self attestation and trust no roots.
    public init(
        rootsByFormat: [AttestationFormat: [Certificate]] = [:], rootsByAAGUID: [AAGUID: [Certificate]] = [:],
        allowedAAGUIDs: Set<AAGUID>? = nil, deniedAAGUIDs: Set<AAGUID> = [], acceptNoneAttestation: Bool = true,
        acceptSelfAttestation: Bool = true, requireTrustedAttestation: Bool = false
    ) {
        self.rootsByFormat = rootsByFormat
        self.rootsByAAGUID = rootsByAAGUID
        self.allowedAAGUIDs = allowedAAGUIDs
        self.deniedAAGUIDs = deniedAAGUIDs
        self.acceptNoneAttestation = acceptNoneAttestation
        self.acceptSelfAttestation = acceptSelfAttestation
        self.requireTrustedAttestation = requireTrustedAttestation
    }

    /// The vendors' published roots for apple, android-key and android-safetynet; nothing else configured.
    public static let platformDefaults: AttestationTrust = {
        func load(_ pems: [String]) -> [Certificate] { pems.compactMap { try? Certificate(pemEncoded: $0) } }
        return AttestationTrust(rootsByFormat: [
            .apple: load(KnownRoots.apple),
            .androidKey: load(KnownRoots.androidKey),
            .androidSafetyNet: load(KnownRoots.androidSafetyNet),
        ])
    }()
}

/// The outcome of verifying one attestation statement.
public struct AttestationOutcome: Sendable {
    /// The format.
    public let format: AttestationFormat
    /// The attestation type.
    public let type: AttestationType
    /// The trust assessment.
    public let trust: AttestationTrustResult
    /// The certificate path from the statement, leaf first (DER), empty for none and self attestation.
    public let certificates: [[UInt8]]
    /// For compound attestation: each statement's outcome.
    public let statements: [AttestationOutcome]
}

/// What a format verifier proved: the type and the certificate path still to be assessed.
struct AttestationEvidence {
    let type: AttestationType
    let path: [Certificate]
}

/// Everything a format verifier may look at.
struct AttestationInput {
    let authenticatorData: AuthenticatorData
    let attestedCredential: AuthenticatorData.AttestedCredentialData
    let credentialKey: CredentialPublicKey
    let clientDataHash: [UInt8]
    let statement: CBORValue
    let now: Date
    let policy: RegistrationPolicy

    /// authenticatorData || clientDataHash: what most formats sign.
    var signedData: [UInt8] { authenticatorData.bytes + clientDataHash }
}

enum AttestationStatementReader {
    static func invalid(_ format: AttestationFormat, _ reason: String) -> WebAuthnError {
        WebAuthnError(.attestationInvalid, "\(format.rawValue): \(reason)")
    }

    static func algorithm(_ statement: CBORValue, _ format: AttestationFormat) throws(WebAuthnError) -> COSEAlgorithm {
        guard let value = statement[text: "alg"]?.integer else { throw invalid(format, "attStmt has no integer alg") }
        guard let algorithm = COSEAlgorithm(rawValue: value) else {
            throw invalid(format, "attStmt alg \(value) is not supported")
        }
        return algorithm
    }

    static func signature(_ statement: CBORValue, _ format: AttestationFormat) throws(WebAuthnError) -> [UInt8] {
        guard let sig = statement[text: "sig"]?.byteString else {
            throw invalid(format, "attStmt has no byte-string sig")
        }
        return sig
    }

    /// The x5c certificates, leaf first; nil when the statement has no x5c member.
    static func certificates(
        _ statement: CBORValue, _ format: AttestationFormat
    ) throws(WebAuthnError) -> [Certificate]? {
        guard let member = statement[text: "x5c"] else { return nil }
        guard let items = member.arrayItems, !items.isEmpty else {
            throw invalid(format, "x5c is not a non-empty array")
        }
        var certificates: [Certificate] = []
        for item in items {
            guard let der = item.byteString, let cert = try? Certificate(derEncoded: der) else {
                throw invalid(format, "x5c holds something that is not a DER certificate")
            }
            certificates.append(cert)
        }
        return certificates
    }

    static func requireKeys(_ statement: CBORValue, _ allowed: Set<String>, _ format: AttestationFormat)
        throws(WebAuthnError)
    {
        guard let entries = statement.mapEntries else { throw invalid(format, "attStmt is not a map") }
        for entry in entries {
            guard let key = entry.key.textString, allowed.contains(key) else {
                throw invalid(format, "attStmt has an unexpected member")
            }
        }
    }

    /// Checks an id-fido-gen-ce-aaguid extension, when present: not critical and equal to the AAGUID.
    static func checkAAGUIDExtension(
        _ cert: Certificate, _ aaguid: AAGUID, _ format: AttestationFormat
    ) throws(WebAuthnError) {
        guard let ext = cert.extensionValue(oid: "1.3.6.1.4.1.45724.1.1.4") else { return }
        guard !ext.critical else { throw invalid(format, "AAGUID certificate extension is critical") }
        var reader = DERReader(ext.value)
        guard let inner = reader.read(), inner.isOctetString, reader.isAtEnd, Array(inner.content) == aaguid.bytes
        else { throw invalid(format, "AAGUID certificate extension does not match authenticator data") }
    }

    static func verify(
        _ key: PublicKey, _ algorithm: COSEAlgorithm, signature: [UInt8], message: [UInt8],
        _ format: AttestationFormat
    ) throws(WebAuthnError) {
        guard key.verify(signature: signature, message: message, scheme: algorithm.signatureScheme) else {
            throw invalid(format, "attestation signature does not verify")
        }
    }

    static func publicKey(_ cert: Certificate, _ format: AttestationFormat) throws(WebAuthnError) -> PublicKey {
        do {
            return try cert.publicKey()
        } catch {
            throw invalid(format, "attestation certificate key is unusable")
        }
    }
}

/// Verifies an attestation statement of any supported format and assesses its trust.
struct AttestationVerifier {
    let trust: AttestationTrust

    func verify(format name: String, input: AttestationInput, nested: Bool = false) throws(WebAuthnError)
        -> AttestationOutcome
    {
        guard let format = AttestationFormat(rawValue: name) else {
            throw WebAuthnError(.unsupportedAttestationFormat, "attestation format \"\(name)\" is not supported")
        }
        guard input.statement.mapEntries != nil || format == .compound else {
            throw WebAuthnError(.attestationInvalid, "attStmt is not a map")
        }
        let evidence: AttestationEvidence
        switch format {
        case .none:
            guard input.statement.mapEntries?.isEmpty == true else {
                throw WebAuthnError(.attestationInvalid, "none: attStmt is not empty")
            }
            evidence = AttestationEvidence(type: .none, path: [])
        case .packed: evidence = try PackedAttestation.verify(input)
        case .fidoU2F: evidence = try FIDOU2FAttestation.verify(input)
        case .apple: evidence = try AppleAttestation.verify(input)
        case .androidKey: evidence = try AndroidKeyAttestation.verify(input)
        case .androidSafetyNet: evidence = try AndroidSafetyNetAttestation.verify(input)
        case .tpm: evidence = try TPMAttestation.verify(input)
        case .compound:
            guard !nested else { throw WebAuthnError(.attestationInvalid, "compound attestation nested in compound") }
            return try verifyCompound(input)
        }
        return try assess(format: format, evidence: evidence, input: input)
    }

    private func assess(
        format: AttestationFormat, evidence: AttestationEvidence, input: AttestationInput
    ) throws(WebAuthnError) -> AttestationOutcome {
        let aaguid = input.attestedCredential.aaguid
        let der = evidence.path.map(\.derEncoded)
        switch evidence.type {
        case .none:
            guard trust.acceptNoneAttestation else {
                throw WebAuthnError(.attestationUntrusted, "none attestation is not accepted")
            }
            return AttestationOutcome(
                format: format, type: .none, trust: .notApplicable, certificates: [], statements: [])
        case .self:
            guard trust.acceptSelfAttestation else {
                throw WebAuthnError(.attestationUntrusted, "self attestation is not accepted")
            }
            return AttestationOutcome(
                format: format, type: .self, trust: .notApplicable, certificates: [], statements: [])
        default:
            break
        }
        let roots = trust.rootsByAAGUID[aaguid] ?? trust.rootsByFormat[format] ?? []
        guard let leaf = evidence.path.first, !roots.isEmpty else {
            guard !trust.requireTrustedAttestation else {
                throw WebAuthnError(.attestationUntrusted, "\(format.rawValue): no trust anchor configured")
            }
            return AttestationOutcome(
                format: format, type: evidence.type, trust: .unverified, certificates: der, statements: [])
        }
        do {
            try Certificate.verifyChain(
                leaf: leaf, intermediates: Array(evidence.path.dropFirst()), trustAnchors: roots,
                at: Int64(input.now.timeIntervalSince1970.rounded(.down)))
        } catch {
            throw WebAuthnError(
                .attestationUntrusted, "\(format.rawValue): certificate path rejected: \(error.details)")
        }
        return AttestationOutcome(
            format: format, type: evidence.type, trust: .trusted, certificates: der, statements: [])
    }

    private func verifyCompound(_ input: AttestationInput) throws(WebAuthnError) -> AttestationOutcome {
        guard let items = input.statement.arrayItems, items.count >= 2 else {
            throw WebAuthnError(.attestationInvalid, "compound: attStmt is not an array of two or more statements")
        }
        var outcomes: [AttestationOutcome] = []
        for item in items {
            guard let format = item[text: "fmt"]?.textString, let statement = item[text: "attStmt"],
                item.mapEntries?.count == 2
            else {
                throw WebAuthnError(.attestationInvalid, "compound: each statement needs exactly fmt and attStmt")
            }
            let inner = AttestationInput(
                authenticatorData: input.authenticatorData, attestedCredential: input.attestedCredential,
                credentialKey: input.credentialKey, clientDataHash: input.clientDataHash, statement: statement,
                now: input.now, policy: input.policy)
            outcomes.append(try verify(format: format, input: inner, nested: true))
        }
        let allTrusted = outcomes.allSatisfy { $0.trust == .trusted }
        return AttestationOutcome(
            format: .compound, type: .compound, trust: allTrusted ? .trusted : .unverified, certificates: [],
            statements: outcomes)
    }
}
