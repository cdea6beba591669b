import Crypto
import Encoding
import Foundation
import JSON

/// A FIDO Metadata Service (MDS3) BLOB, verified: a compact JWS (RS256 or ES256) whose `x5c` path chains to a
/// root the relying party configured, whose `nextUpdate` has not passed, and whose entries were read within limits.
///
/// What it is used for here: the latest status report of each authenticator model (AAGUID). A registration of a
/// model whose latest status is one of `refusingStatuses` is refused (`AttestationTrust.refusedAAGUIDs`).
public struct MetadataBLOB: Sendable {
    /// Why a BLOB was refused, for the log and the start-up message.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
        init(_ reason: String) { self.reason = reason }
    }

    /// One authenticator model's entry.
    public struct Entry: Sendable, Equatable {
        public let aaguid: AAGUID
        /// The status of the report with the latest effectiveDate (the last listed among equal dates).
        public let latestStatus: String
        /// Its effectiveDate (`YYYY-MM-DD`), or empty when the report gave none.
        public let effectiveDate: String
    }

    /// Statuses that refuse a registration (FIDO Metadata Service §3.1.4, AuthenticatorStatus): the model's keys or
    /// user verification can no longer be trusted.
    public static let refusingStatuses: Set<String> = [
        "REVOKED", "ATTESTATION_KEY_COMPROMISE", "USER_KEY_REMOTE_COMPROMISE", "USER_KEY_PHYSICAL_COMPROMISE",
        "USER_VERIFICATION_BYPASS",
    ]
    /// Limits: the BLOB's size, its entries, and each entry's status reports.
    public static let maximumSize = 32 << 20
    public static let maximumEntries = 20_000
    public static let maximumStatusReports = 200

    /// The BLOB's serial number (`no`): a later BLOB has a larger one.
    public let number: Int
    /// `nextUpdate` as given (`YYYY-MM-DD`).
    public let nextUpdate: String
    /// Entries with an AAGUID (FIDO2 authenticators), by AAGUID. Entries that name U2F key identifiers instead are
    /// not kept.
    public let entries: [AAGUID: Entry]

    /// The models a registration is refused for, each with the status that refuses it (worked out once).
    public let refusedAAGUIDs: [AAGUID: String]
    /// Each model's `metadataStatement.attestationRootCertificates`: the roots its attestation must chain to
    /// (`AttestationTrust.rootsByAAGUID`).
    public let attestationRoots: [AAGUID: [Certificate]]
    /// At most this many attestation roots an entry.
    public static let maximumAttestationRoots = 16

    /// Verifies and reads `bytes`. `roots` are the trust anchors for the BLOB's signing path; `now` decides
    /// certificate validity and whether `nextUpdate` has passed (a BLOB is good through its nextUpdate day, UTC).
    public init(jws bytes: [UInt8], roots: [Certificate], now: Date) throws(Failure) {
        guard !bytes.isEmpty else { throw Failure("the BLOB is empty") }
        guard bytes.count <= Self.maximumSize else {
            throw Failure("the BLOB is \(bytes.count) bytes, more than \(Self.maximumSize)")
        }
        let trimmed = Array(bytes.reversed().drop { $0 == 0x0A || $0 == 0x0D || $0 == 0x20 }.reversed())
        let jws: CompactJWS
        do {
            jws = try CompactJWS(trimmed)
        } catch {
            throw Failure("malformed: \(Self.text(error))")
        }
        guard jws.header["alg"]?.stringValue != "none", !jws.signature.isEmpty else {
            throw Failure("unsigned: the JWS has no signature")
        }
        do {
            try jws.verifySignature(allowed: ["RS256", "ES256"])
        } catch {
            throw Failure("badly signed: \(Self.text(error))")
        }
        guard !roots.isEmpty else { throw Failure("no root certificate to verify the BLOB's signer") }
        do {
            try Certificate.verifyChain(
                leaf: jws.certificates[0], intermediates: Array(jws.certificates.dropFirst()), trustAnchors: roots,
                at: Int64(now.timeIntervalSince1970.rounded(.down)))
        } catch {
            throw Failure("badly signed: the signing certificate does not chain to the root (\(error.details))")
        }
        try self.init(verifiedPayload: jws.payload, now: now)
    }

    /// Reads a payload whose signature was verified: `no`, `nextUpdate` (not passed at `now`) and the entries.
    /// Internal so that the fuzz target can reach it without a signature.
    init(verifiedPayload bytes: [UInt8], now: Date) throws(Failure) {
        let payload: JSONValue
        do {
            payload = try JSONReader.parse(bytes)
        } catch {
            throw Failure("malformed: the payload is not JSON")
        }
        guard case .object = payload else { throw Failure("malformed: the payload is not a JSON object") }
        guard case .number(let serial)? = payload["no"], serial >= 0, serial <= 1e15, serial == serial.rounded()
        else { throw Failure("malformed: the payload has no whole number no") }
        guard let nextUpdate = payload["nextUpdate"]?.stringValue, let nextDay = Self.day(nextUpdate) else {
            throw Failure("malformed: the payload has no nextUpdate date (YYYY-MM-DD)")
        }
        guard Self.day(of: now) <= nextDay else {
            throw Failure("expired: nextUpdate \(nextUpdate) has passed")
        }
        guard case .array(let items)? = payload["entries"] else {
            throw Failure("malformed: the payload has no entries array")
        }
        guard items.count <= Self.maximumEntries else {
            throw Failure("malformed: \(items.count) entries, more than \(Self.maximumEntries)")
        }
        var entries: [AAGUID: Entry] = [:]
        var attestationRoots: [AAGUID: [Certificate]] = [:]
        for (index, item) in items.enumerated() {
            guard case .object = item else { throw Failure("malformed: entry \(index) is not an object") }
            guard let aaguidText = item["aaguid"]?.stringValue else { continue }
            guard let aaguid = AAGUID(aaguidText) else {
                throw Failure("malformed: entry \(index) has an aaguid that is not a UUID")
            }
            guard case .array(let reports)? = item["statusReports"], !reports.isEmpty else {
                throw Failure("malformed: entry \(index) has no statusReports")
            }
            guard reports.count <= Self.maximumStatusReports else {
                throw Failure("malformed: entry \(index) has more than \(Self.maximumStatusReports) status reports")
            }
            var latest: (status: String, date: String)?
            for report in reports {
                guard let status = report["status"]?.stringValue, !status.isEmpty else {
                    throw Failure("malformed: entry \(index) has a status report without a status")
                }
                let date = report["effectiveDate"]?.stringValue ?? ""
                guard date.isEmpty || Self.day(date) != nil else {
                    throw Failure("malformed: entry \(index) has an effectiveDate that is not YYYY-MM-DD")
                }
                if latest == nil || date >= latest!.date { latest = (status, date) }
            }
            guard entries[aaguid] == nil else { throw Failure("malformed: aaguid \(aaguid) is listed twice") }
            entries[aaguid] = Entry(aaguid: aaguid, latestStatus: latest!.status, effectiveDate: latest!.date)
            if case .array(let encoded)? = item["metadataStatement"]?["attestationRootCertificates"] {
                guard encoded.count <= Self.maximumAttestationRoots else {
                    throw Failure(
                        "malformed: entry \(index) has more than \(Self.maximumAttestationRoots) attestation roots")
                }
                var roots: [Certificate] = []
                for value in encoded {
                    // Standard base64 DER, as the metadata statement format gives them.
                    guard let text = value.stringValue, let der = Base64URL.decode(text),
                        let certificate = try? Certificate(derEncoded: der)
                    else {
                        throw Failure("malformed: entry \(index) has an attestation root that is not a certificate")
                    }
                    roots.append(certificate)
                }
                if !roots.isEmpty { attestationRoots[aaguid] = roots }
            }
        }
        number = Int(serial)
        self.nextUpdate = nextUpdate
        self.entries = entries
        self.attestationRoots = attestationRoots
        refusedAAGUIDs = entries.compactMapValues {
            Self.refusingStatuses.contains($0.latestStatus) ? $0.latestStatus : nil
        }
    }

    /// Every certificate of a PEM file (at most eight), for the configured root.
    public static func certificates(pem: String) throws(Failure) -> [Certificate] {
        let marker = "-----BEGIN CERTIFICATE-----"
        let blocks = pem.components(separatedBy: marker).dropFirst()
        guard !blocks.isEmpty else { throw Failure("the root file holds no PEM certificate") }
        guard blocks.count <= 8 else { throw Failure("the root file holds more than 8 certificates") }
        var certificates: [Certificate] = []
        for block in blocks {
            guard let certificate = try? Certificate(pemEncoded: marker + block) else {
                throw Failure("the root file holds a PEM block that is not a certificate")
            }
            certificates.append(certificate)
        }
        return certificates
    }

    private static func text(_ error: CompactJWS.Failure) -> String {
        switch error {
        case .malformed(let reason), .badSignature(let reason): return reason
        }
    }

    /// A `YYYY-MM-DD` date as a comparable number (YYYYMMDD), or nil.
    static func day(_ text: String) -> Int? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.map(\.count) == [4, 2, 2], parts.allSatisfy({ $0.allSatisfy(\.isASCII) }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        return year * 10_000 + month * 100 + day
    }

    /// The UTC day of `date` as YYYYMMDD.
    static func day(of date: Date) -> Int {
        let civil = TimestampText.civil(fromUnixSeconds: Int64(date.timeIntervalSince1970.rounded(.down)))
        return Int(civil.year * 10_000 + civil.month * 100 + civil.day)
    }
}
