import Domain
import Encoding
import Foundation

/// Reads identifiers from request fields, failing with `invalid_request` naming the field.
public enum RequestFields {
    public static func accountID(_ text: String, field: String = "account_id") throws -> AccountID {
        AccountID(try uuid(text, field: field))
    }

    public static func challengeID(_ text: String, field: String = "challenge_id") throws -> ChallengeID {
        ChallengeID(try uuid(text, field: field))
    }

    public static func sessionID(_ text: String, field: String = "session_id") throws -> SessionID {
        SessionID(try uuid(text, field: field))
    }

    public static func registrationID(_ text: String, field: String = "registration_id") throws
        -> AccountRegistrationID
    {
        AccountRegistrationID(try uuid(text, field: field))
    }

    public static func credentialID(_ bytes: [UInt8], field: String = "credential_id") throws -> CredentialID {
        guard let id = CredentialID(bytes) else {
            throw DomainError(.invalidRequest, "\(field) must be 1 to \(CredentialID.maximumLength) bytes")
        }
        return id
    }

    /// A password as a request carries it: at most 1,024 bytes (what the hasher takes), checked before any work.
    public static func password(_ text: String, field: String = "password") throws -> String {
        guard text.utf8.count <= 1024 else { throw DomainError(.invalidRequest, "\(field) is too long") }
        return text
    }

    public static func uuid(_ text: String, field: String) throws -> UUID {
        guard text.utf8.count == 36, let value = UUID(text: text) else {
            throw DomainError(.invalidRequest, "\(field) is not a valid identifier")
        }
        return value
    }
}

extension Date {
    /// Milliseconds since the Unix epoch, as the service contracts carry times.
    public var unixMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }

    public init(unixMilliseconds: Int64) { self.init(timeIntervalSince1970: Double(unixMilliseconds) / 1000) }
}
