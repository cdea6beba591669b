import Crypto
import Encoding
import WebAuthn

/// Makes FIDO metadata BLOBs the way the Metadata Service publishes them, under a root of its own: a compact JWS
/// (RS256 or ES256) whose header's x5c holds the signer's certificate, over a payload the test writes.
public final class MetadataBLOBMaker: Sendable {
    public let authority: CertificateAuthority
    public let signer: SigningKey
    /// The signer's certificate (DER), issued by `authority`.
    public let signerCertificate: [UInt8]

    /// A root and a signer valid from `notBefore` (epoch seconds) for ten years; `.rs256` or `.es256`.
    public init(algorithm: COSEAlgorithm = .rs256, notBefore: Int64, commonName: String = "Test Metadata Root") {
        authority = CertificateAuthority(commonName: commonName, notBefore: notBefore)
        signer = SigningKey(algorithm: algorithm)
        signerCertificate = authority.issue(
            subject: [("C", "US"), ("O", "Test"), ("CN", "Test Metadata Signer")], subjectKey: signer,
            notBefore: notBefore, lifetime: 10 * 365 * 86_400)
    }

    /// The root as a PEM file's text.
    public var rootPEM: String { Self.pem(authority.rootCertificate) }

    /// A payload: `no`, `nextUpdate`, and one entry per model with its status reports as (status, effectiveDate).
    /// `roots` gives models their metadataStatement.attestationRootCertificates (DER).
    public static func payload(
        number: Int = 1, nextUpdate: String, entries: [(aaguid: AAGUID, reports: [(String, String)])],
        roots: [AAGUID: [[UInt8]]] = [:]
    ) -> String {
        let items = entries.map { entry in
            let reports = entry.reports.map { #"{"status":"\#($0.0)","effectiveDate":"\#($0.1)"}"# }
            let certificates = (roots[entry.aaguid] ?? []).map { "\"" + Base64URL.encodeStandard($0) + "\"" }
            return #"{"aaguid":"\#(entry.aaguid)","statusReports":[\#(reports.joined(separator: ","))],"#
                + #""metadataStatement":{"aaguid":"\#(entry.aaguid)","description":"Test Authenticator","#
                + #""attestationRootCertificates":[\#(certificates.joined(separator: ","))]}}"#
        }
        return
            #"{"legalHeader":"test","no":\#(number),"nextUpdate":"\#(nextUpdate)","entries":[\#(items.joined(separator: ","))]}"#
    }

    /// The BLOB: `header.payload.signature`. `alg` overrides the header's alg; `signed: false` leaves the
    /// signature empty; `signer` signs with another key than the certificate's.
    public func blob(payload: String, alg: String? = nil, signed: Bool = true, signer other: SigningKey? = nil)
        -> [UInt8]
    {
        let key = other ?? signer
        let algorithm = alg ?? (signer.algorithm == .es256 ? "ES256" : "RS256")
        let header = #"{"alg":"\#(algorithm)","typ":"JWT","x5c":["\#(Base64URL.encodeStandard(signerCertificate))"]}"#
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        guard signed else { return Array((input + ".").utf8) }
        var signature = key.sign(Array(input.utf8))
        if key.algorithm == .es256 { signature = Self.joseSignature(der: signature) }
        return Array((input + "." + Base64URL.encode(signature)).utf8)
    }

    /// PEM text of one DER certificate.
    public static func pem(_ der: [UInt8]) -> String {
        let base64 = Array(Base64URL.encodeStandard(der))
        let lines = stride(from: 0, to: base64.count, by: 64).map { String(base64[$0..<min($0 + 64, base64.count)]) }
        return "-----BEGIN CERTIFICATE-----\n" + lines.joined(separator: "\n") + "\n-----END CERTIFICATE-----\n"
    }

    /// A DER ECDSA signature (SEQUENCE of two INTEGERs) as JOSE's fixed-width r || s for P-256.
    static func joseSignature(der: [UInt8]) -> [UInt8] {
        var position = 2
        if der[1] & 0x80 != 0 { position += Int(der[1] & 0x7F) }
        func integer() -> [UInt8] {
            let length = Int(der[position + 1])
            let value = Array(der[(position + 2)..<(position + 2 + length)].drop { $0 == 0 })
            position += 2 + length
            return Array(repeating: 0, count: 32 - value.count) + value
        }
        let r = integer()
        return r + integer()
    }
}
