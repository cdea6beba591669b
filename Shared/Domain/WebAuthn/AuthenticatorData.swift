import Crypto
import Encoding
import Foundation

/// Authenticator data (WebAuthn §6.1), parsed strictly.
public struct AuthenticatorData: Sendable {
    /// The flags byte.
    public struct Flags: OptionSet, Sendable, Hashable {
        /// The flags byte as sent.
        public let rawValue: UInt8
        /// Flags from their byte.
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// User present (bit 0).
        public static let userPresent = Flags(rawValue: 0x01)
        /// User verified (bit 2).
        public static let userVerified = Flags(rawValue: 0x04)
        /// Backup eligible (bit 3).
        public static let backupEligible = Flags(rawValue: 0x08)
        /// Backed up (bit 4).
        public static let backedUp = Flags(rawValue: 0x10)
        /// Attested credential data included (bit 6).
        public static let attestedCredentialData = Flags(rawValue: 0x40)
        /// Extension data included (bit 7).
        public static let extensionData = Flags(rawValue: 0x80)
    }

    /// Attested credential data (§6.5.1).
    public struct AttestedCredentialData: Sendable {
        /// The authenticator model's AAGUID (16 bytes).
        public let aaguid: AAGUID
        /// The credential ID (at most 1023 bytes).
        public let credentialID: [UInt8]
        /// The credential public key as a COSE_Key, with its bytes.
        public let publicKeyBytes: [UInt8]
        /// The decoded COSE_Key map.
        public let publicKeyValue: CBORValue
    }

    /// The longest credential ID WebAuthn allows.
    public static let maximumCredentialIDLength = 1023

    /// The raw bytes.
    public let bytes: [UInt8]
    /// SHA-256 of the RP ID the authenticator scoped the credential to.
    public let rpIDHash: ArraySlice<UInt8>
    /// The flags.
    public let flags: Flags
    /// The signature counter.
    public let signCount: UInt32
    /// Present when the AT flag is set.
    public let attestedCredentialData: AttestedCredentialData?
    /// The authenticator extension outputs map, present when the ED flag is set.
    public let extensions: CBORValue?

    /// Parses authenticator data, rejecting short input, inconsistent flags and trailing bytes.
    public init(bytes: [UInt8]) throws(WebAuthnError) {
        guard bytes.count >= 37 else {
            throw WebAuthnError(.malformedAuthenticatorData, "authenticator data is \(bytes.count) bytes, minimum 37")
        }
        self.bytes = bytes
        rpIDHash = bytes[0..<32]
        flags = Flags(rawValue: bytes[32])
        signCount = UInt32(bytes[33]) << 24 | UInt32(bytes[34]) << 16 | UInt32(bytes[35]) << 8 | UInt32(bytes[36])
        if flags.contains(.backedUp) && !flags.contains(.backupEligible) {
            throw WebAuthnError(.backupStateInvalid, "BS flag set on a credential that is not backup eligible")
        }
        var position = 37
        if flags.contains(.attestedCredentialData) {
            guard bytes.count - position >= 18 else {
                throw WebAuthnError(.malformedAuthenticatorData, "attested credential data is truncated")
            }
            let aaguid = AAGUID(bytes: Array(bytes[position..<position + 16]))
            let idLength = Int(bytes[position + 16]) << 8 | Int(bytes[position + 17])
            position += 18
            // §6.5.1: a credential ID is at least 16 bytes of entropy in practice; zero bytes names no credential.
            guard idLength > 0 else {
                throw WebAuthnError(.malformedAuthenticatorData, "credential ID is empty")
            }
            guard idLength <= AuthenticatorData.maximumCredentialIDLength else {
                throw WebAuthnError(.credentialIDTooLong, "credential ID is \(idLength) bytes, maximum 1023")
            }
            guard bytes.count - position >= idLength else {
                throw WebAuthnError(.malformedAuthenticatorData, "credential ID is truncated")
            }
            let credentialID = Array(bytes[position..<position + idLength])
            position += idLength
            let key: (value: CBORValue, consumed: Int)
            do {
                key = try CBORDecoder.decodePrefix(bytes, from: position)
            } catch {
                throw WebAuthnError(.malformedAuthenticatorData, "credential public key is not valid CBOR: \(error)")
            }
            let keyBytes = Array(bytes[position..<position + key.consumed])
            position += key.consumed
            attestedCredentialData = AttestedCredentialData(
                aaguid: aaguid, credentialID: credentialID, publicKeyBytes: keyBytes, publicKeyValue: key.value)
        } else {
            attestedCredentialData = nil
        }
        if flags.contains(.extensionData) {
            let item: (value: CBORValue, consumed: Int)
            do {
                item = try CBORDecoder.decodePrefix(bytes, from: position)
            } catch {
                throw WebAuthnError(.malformedAuthenticatorData, "extensions are not valid CBOR: \(error)")
            }
            guard item.value.mapEntries != nil else {
                throw WebAuthnError(.malformedAuthenticatorData, "extensions are not a CBOR map")
            }
            position += item.consumed
            extensions = item.value
        } else {
            extensions = nil
        }
        guard position == bytes.count else {
            throw WebAuthnError(.malformedAuthenticatorData, "\(bytes.count - position) trailing bytes")
        }
    }

    /// Whether UP is set.
    public var userPresent: Bool { flags.contains(.userPresent) }
    /// Whether UV is set.
    public var userVerified: Bool { flags.contains(.userVerified) }
    /// Whether BE is set.
    public var backupEligible: Bool { flags.contains(.backupEligible) }
    /// Whether BS is set.
    public var backedUp: Bool { flags.contains(.backedUp) }

    /// Checks the RP ID hash against SHA-256 of the RP ID, in constant time.
    func verifyRPID(_ rpID: String, hash expected: [UInt8]) throws(WebAuthnError) {
        guard constantTimeEquals(rpIDHash, expected) else {
            throw WebAuthnError(.rpIDHashMismatch, "rpIdHash is not SHA-256 of \"\(rpID)\"")
        }
    }
}

/// An authenticator model identifier (16 bytes).
public struct AAGUID: Sendable, Hashable, CustomStringConvertible {
    /// The 16 bytes.
    public let bytes: [UInt8]

    /// Wraps 16 bytes.
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Parses the textual UUID form ("xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", any case).
    public init?(_ text: String) {
        guard let uuid = UUID(text: text) else { return nil }
        bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
    }

    /// The all-zero AAGUID that `none` attestation and many software authenticators report.
    public static let zero = AAGUID(bytes: [UInt8](repeating: 0, count: 16))

    /// The canonical UUID text, lower case (plain hex for a value that is not 16 bytes).
    public var description: String {
        guard bytes.count == 16 else { return bytes.map { String(format: "%02x", $0) }.joined() }
        return bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }.lowercaseText
    }
}
