/// A WebAuthn check that failed: a stable code for machines, a reason for the log, and where it was raised.
///
/// `code.rawValue` is the `reason` value the gateway returns (see docs/api.md). The human reason is meant for logs;
/// it never contains key material.
public struct WebAuthnError: Error, Sendable, CustomStringConvertible {
    /// The check that failed. Raw values are stable, snake_case, and part of the public API.
    public enum Code: String, Sendable, CaseIterable {
        case typeMismatch = "type_mismatch"
        case challengeMismatch = "challenge_mismatch"
        case originMismatch = "origin_mismatch"
        case crossOriginNotAllowed = "cross_origin_not_allowed"
        case rpIDHashMismatch = "rp_id_hash_mismatch"
        case userPresentFlagNotSet = "user_present_flag_not_set"
        case userVerificationRequired = "user_verification_required"
        case backupStateInvalid = "backup_state_invalid"
        case unsupportedAlgorithm = "unsupported_algorithm"
        case algorithmNotAllowed = "algorithm_not_allowed"
        case credentialIDTooLong = "credential_id_too_long"
        case attestationInvalid = "attestation_invalid"
        case attestationUntrusted = "attestation_untrusted"
        case signatureInvalid = "signature_invalid"
        case signCountRegressed = "sign_count_regressed"
        case userHandleMismatch = "user_handle_mismatch"
        case malformedCBOR = "malformed_cbor"
        case malformedClientData = "malformed_client_data"
        case malformedAuthenticatorData = "malformed_authenticator_data"
        /// The credential ID in the response differs from the one inside the signed data.
        case credentialIDMismatch = "credential_id_mismatch"
        /// The credential is not in the allow list the challenge was issued with.
        case credentialNotAllowed = "credential_not_allowed"
        /// The attestation statement format is unknown or not accepted.
        case unsupportedAttestationFormat = "unsupported_attestation_format"
        /// clientDataJSON names a token binding status other than "present" or "supported".
        case tokenBindingInvalid = "token_binding_invalid"
    }

    /// The check that failed.
    public let code: Code
    /// What exactly was wrong, for the log.
    public let reason: String
    /// The source file that raised the error.
    public let file: String
    /// The source line that raised the error.
    public let line: Int

    /// Creates an error, recording the caller's location.
    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }

    /// "code: reason (file:line)", for logs.
    public var description: String { "\(code.rawValue): \(reason) (\(file):\(line))" }
}
