import Crypto
import Domain
import Encoding
import Foundation
import PasswordHashing

/// A record that passed every check of its own: what the account will be made of.
public struct ImportRecord: Sendable, Hashable {
    public let email: EmailAddress
    public let displayName: String
    /// The stored hash exactly as given; `StoredPasswordHash` read it.
    public let passwordHash: String?
    public let externalID: String?
    /// Unix microseconds, or nil for the time of the import.
    public let createdAtMicroseconds: Int64?
    public let emailVerified: Bool
    /// SHA-256 of the record's fields in a fixed encoding: a later run that meets an account made from a record
    /// with the same digest knows that line is unchanged.
    public let digest: [UInt8]

    public init(
        email: EmailAddress, displayName: String, passwordHash: String?, externalID: String?,
        createdAtMicroseconds: Int64?, emailVerified: Bool
    ) {
        self.email = email
        self.displayName = displayName
        self.passwordHash = passwordHash
        self.externalID = externalID
        self.createdAtMicroseconds = createdAtMicroseconds
        self.emailVerified = emailVerified
        var encoded: [UInt8] = [1]  // the encoding's version
        func field(_ text: String?) {
            guard let text else { return encoded.append(0) }
            encoded.append(1)
            let bytes = Array(text.utf8)
            withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { encoded.append(contentsOf: $0) }
            encoded.append(contentsOf: bytes)
        }
        field(email.address)
        field(displayName)
        field(passwordHash)
        field(externalID)
        field(createdAtMicroseconds.map { String($0) })
        encoded.append(emailVerified ? 1 : 0)
        self.digest = sha256(encoded)
    }

    /// The account's creation time: `createdAt`, or `now` when the record had none.
    public func createdAt(orNow now: Date) -> Date {
        guard let createdAtMicroseconds else { return now }
        return Date(timeIntervalSince1970: Double(createdAtMicroseconds) / 1_000_000)
    }
}

/// The checks of one record on its own, with the Domain's rules for emails and names and `StoredPasswordHash`'s
/// for hashes. Nothing here needs the database: duplicates and taken addresses are `BatchClassifier`'s.
public struct RecordValidator: Sendable {
    /// A createdAt later than this is refused.
    public let latestCreatedAt: Date

    public init(now: Date) {
        self.latestCreatedAt = now
    }

    public func validate(_ raw: RawImportRecord) -> Result<ImportRecord, ImportReject> {
        guard let rawEmail = raw[.email], !rawEmail.trimmingWhitespace().isEmpty else {
            return .failure(ImportReject(.missingEmail, "no email"))
        }
        guard rawEmail.trimmingWhitespace().unicodeScalars.count <= EmailAddress.maximumLength else {
            return .failure(tooLong(.email, EmailAddress.maximumLength))
        }
        guard let email = EmailAddress(rawEmail) else {
            return .failure(ImportReject(.invalidEmail, "email is not a valid email address"))
        }

        let displayName: String
        if let rawName = raw[.displayName] {
            guard rawName.trimmingWhitespace().unicodeScalars.count <= DisplayName.maximumLength else {
                return .failure(tooLong(.displayName, DisplayName.maximumLength))
            }
            guard let name = DisplayName(rawName) else {
                return .failure(ImportReject(.invalidDisplayName, "displayName is empty or has control characters"))
            }
            displayName = name.value
        } else {
            displayName = Self.defaultDisplayName(for: email)
        }

        var passwordHash: String?
        if let rawHash = raw[.passwordHash] {
            guard rawHash.utf8.count <= StoredPasswordHash.Limits.maximumEncodedLength else {
                return .failure(tooLong(.passwordHash, StoredPasswordHash.Limits.maximumEncodedLength, unit: "bytes"))
            }
            do {
                _ = try StoredPasswordHash(parsing: rawHash)
            } catch {
                switch error.code {
                case .unknownFormat:
                    return .failure(
                        ImportReject(.unknownHashFormat, "passwordHash is in no format this system verifies"))
                case .malformed, .costOutOfRange:
                    return .failure(ImportReject(.malformedHash, "passwordHash: \(error.reason)"))
                }
            }
            passwordHash = rawHash
        }

        var externalID: String?
        if let rawID = raw[.externalID] {
            guard rawID.unicodeScalars.count <= ImportLimits.maximumExternalIDLength else {
                return .failure(tooLong(.externalID, ImportLimits.maximumExternalIDLength))
            }
            // Kept exactly as given, for the operator's joins; surrounding spaces or control characters would make
            // two IDs that look the same differ.
            guard rawID == rawID.trimmingWhitespace(),
                !rawID.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                return .failure(
                    ImportReject(.invalidExternalID, "externalID has surrounding spaces or control characters"))
            }
            externalID = rawID
        }

        var createdAt: Int64?
        if let rawDate = raw[.createdAt] {
            guard rawDate.utf8.count <= ImportLimits.maximumCreatedAtLength else {
                return .failure(tooLong(.createdAt, ImportLimits.maximumCreatedAtLength, unit: "bytes"))
            }
            guard let micros = TimestampText.parseRFC3339(rawDate) else {
                return .failure(ImportReject(.invalidCreatedAt, "createdAt is not an RFC 3339 date-time"))
            }
            guard micros >= 0, Double(micros) / 1_000_000 <= latestCreatedAt.timeIntervalSince1970 else {
                return .failure(ImportReject(.invalidCreatedAt, "createdAt is before 1970 or in the future"))
            }
            createdAt = micros
        }

        var emailVerified = raw.emailVerifiedFlag ?? false
        if let text = raw[.emailVerified] {
            switch text {
            case "true": emailVerified = true
            case "false": emailVerified = false
            default: return .failure(ImportReject(.invalidEmailVerified, "emailVerified must be true or false"))
            }
        }

        return .success(
            ImportRecord(
                email: email, displayName: displayName, passwordHash: passwordHash, externalID: externalID,
                createdAtMicroseconds: createdAt, emailVerified: emailVerified))
    }

    /// The name of an account whose record has none: the email's local part, cut to the longest name allowed.
    public static func defaultDisplayName(for email: EmailAddress) -> String {
        let local = email.address.split(separator: "@", maxSplits: 1).first.map(String.init) ?? email.address
        return String(String.UnicodeScalarView(local.unicodeScalars.prefix(DisplayName.maximumLength)))
    }

    private func tooLong(_ field: ImportField, _ limit: Int, unit: String = "characters") -> ImportReject {
        ImportReject(.fieldTooLong, "\(field.rawValue) is longer than \(limit) \(unit)")
    }
}
