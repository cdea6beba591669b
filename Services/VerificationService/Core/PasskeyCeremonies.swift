import AccessTokens
import AccountRecovery
import Crypto
import Domain
import Encoding
import Foundation
import Observability
import PasskeyProviders
import SessionIssuance
import WebAuthn

/// Finishes WebAuthn ceremonies against consumed challenges and stored credentials, and manages an account's
/// passkeys: verification-service's use cases.
public struct PasskeyCeremonies: Sendable {
    /// The name a new passkey gets until the user renames it, when its AAGUID names no provider.
    public static let defaultName = "Passkey"
    /// The reason of the `invalidCredentials` of a sign-in whose credential ID is not registered (never removed
    /// twice, never another failure): what lets a page call `PublicKeyCredential.signalUnknownCredential`.
    public static let unknownCredentialReason = "unknown_credential"

    let challenges: any ChallengeConsumer
    let accounts: any AccountRepository
    let passkeys: any PasskeyCredentialRepository
    let signIns: any PasskeySignInRepository
    let sessions: SessionIssuer
    let lastUse: LastUseRecorder
    let registrationVerifier: RegistrationVerifier
    let authenticationVerifier: AuthenticationVerifier
    let relyingPartyID: String
    let origins: OriginPolicy
    /// The configured options: the algorithms a registration may use and user verification per ceremony, the same
    /// value the gateway offered.
    let options: CeremonyOptions
    let keys: PublicKeyCache
    let credentials: CredentialCache
    let recoveryRegistrations: (any RecoveryRegistrationRepository)?
    /// The metadata BLOB in force, when one is configured: its compromised models are refused at registration.
    let metadata: MetadataSource?
    /// Draws the verification codes of the accounts created here.
    let random: any RandomSource
    /// Seals those codes and keys their digests; nil: no code is made (stores that do not model mail, in tests).
    let codeKeys: SecretKeyRing?
    let clock: @Sendable () -> Date
    let logger: Logger
    /// Names a new passkey after its provider (the community AAGUID list).
    var providers: PasskeyProviderCatalog = .empty
    let metrics: MetricsRegistry

    public init(
        challenges: any ChallengeConsumer, accounts: any AccountRepository, passkeys: any PasskeyCredentialRepository,
        signIns: any PasskeySignInRepository, sessions: SessionIssuer, lastUse: LastUseRecorder,
        registrationVerifier: RegistrationVerifier = RegistrationVerifier(),
        authenticationVerifier: AuthenticationVerifier = AuthenticationVerifier(), relyingPartyID: String,
        origins: OriginPolicy, options: CeremonyOptions = .standard,
        keys: PublicKeyCache = PublicKeyCache(), credentials: CredentialCache = CredentialCache(),
        recoveryRegistrations: (any RecoveryRegistrationRepository)? = nil, metadata: MetadataSource? = nil,
        random: any RandomSource = SecureRandom(), codeKeys: SecretKeyRing? = nil,
        clock: @escaping @Sendable () -> Date = Date.init, logger: Logger, metrics: MetricsRegistry
    ) {
        self.metrics = metrics
        self.codeKeys = codeKeys
        self.recoveryRegistrations = recoveryRegistrations
        self.metadata = metadata
        self.random = random
        self.challenges = challenges
        self.accounts = accounts
        self.passkeys = passkeys
        self.signIns = signIns
        self.sessions = sessions
        self.lastUse = lastUse
        self.registrationVerifier = registrationVerifier
        self.authenticationVerifier = authenticationVerifier
        self.relyingPartyID = relyingPartyID
        self.origins = origins
        self.options = options
        self.keys = keys
        self.credentials = credentials
        self.clock = clock
        self.logger = logger
    }

    /// Adds a passkey to a signed-in account. The challenge is consumed whether or not verification succeeds.
    public func finishRegistration(accountID: AccountID, challengeID: ChallengeID, response: RegistrationResponse)
        async throws -> PasskeyCredential
    {
        let (challenge, mode) = try await challenges.consumeRegistration(challengeID: challengeID, accountID: accountID)
        let verified = try verifyRegistration(
            response, challenge: challenge, mediation: mode == .conditional ? .conditional : .modal,
            accountID: accountID)
        let credential = try storedCredential(verified, accountID: accountID)
        try await passkeys.add(credential)
        logger.audit(
            .passkeyRegistered,
            [
                "credential.id": Base64URL.encode(credential.credentialID.bytes),
                "account.id": accountID.description, "mode": mode.rawValue,
                "format": verified.attestationFormat.rawValue,
                "aaguid": verified.aaguid.description, "user_present": String(verified.userPresent),
            ])
        AdoptionMetrics.registered(metrics, mode: mode.rawValue)
        if mode == .conditional { AdoptionMetrics.automaticUpgradeSucceeded(metrics) }
        return credential
    }

    /// Adds a passkey for a recovery session and signs the user in: in one transaction the recovery session ends,
    /// the passkey is stored and a passkey session is issued. Throws `unauthenticated` when the recovery session is
    /// no longer live (nothing is stored). The challenge is consumed whether or not verification succeeds.
    public func finishRecoveryRegistration(
        accountID: AccountID, challengeID: ChallengeID, response: RegistrationResponse, recoverySessionID: SessionID
    ) async throws -> SessionIssuer.IssuedSession {
        guard let recoveryRegistrations else { throw DomainError(.unavailable, "recovery registration is not wired") }
        let (challenge, _) = try await challenges.consumeRegistration(challengeID: challengeID, accountID: accountID)
        // A recovery session proves no presence of its own: the new passkey must (UP = 1, modal).
        let verified = try verifyRegistration(response, challenge: challenge, mediation: .modal, accountID: accountID)
        let credential = try storedCredential(verified, accountID: accountID)
        let pending = sessions.newSession(
            accountID: accountID, method: .passkey, references: AuthenticationMethodReferences.recovery,
            passkey: credential.id)
        let session = pending.session
        guard
            let displayName = try await recoveryRegistrations.completeRecovery(
                credential, endingRecoverySession: recoverySessionID, session: session)
        else {
            throw DomainError(.unauthenticated, "the recovery session is no longer live")
        }
        logger.audit(
            .passkeyRegistered,
            [
                "credential.id": Base64URL.encode(credential.credentialID.bytes), "account.id": accountID.description,
                "mode": "recovery", "format": verified.attestationFormat.rawValue,
                "aaguid": verified.aaguid.description,
            ])
        AdoptionMetrics.registered(metrics, mode: RegistrationMode.modal.rawValue)
        logger.audit(
            .recoveryCompleted,
            [
                "account.id": accountID.description, "recovery_session.id": recoverySessionID.description,
                "session.id": session.id.description,
            ])
        return try await sessions.issue(pending, displayName: displayName)
    }

    /// Creates an account with its first passkey: account, email and passkey in one transaction.
    public func finishAccountRegistration(
        registrationID: AccountRegistrationID, email rawEmail: String?, displayName rawName: String?,
        response: RegistrationResponse
    ) async throws -> (account: Account, session: SessionIssuer.IssuedSession) {
        let registration = try await challenges.consumeAccountRegistration(id: registrationID)
        // Given at finish, or else at start; required by then, and checked by the same rule either way.
        guard
            let email = try EmailAddress.validatedIfPresent(rawEmail)
                ?? EmailAddress.validatedIfPresent(registration.email)
        else { throw DomainError(.invalidRequest, "a valid email is required, at start or at finish") }
        guard
            let displayName = try DisplayName.validatedIfPresent(rawName)
                ?? DisplayName.validatedIfPresent(registration.displayName)
        else { throw DomainError(.invalidRequest, "a display name is required, at start or at finish") }
        // A new account must prove user presence: no conditional mediation here.
        let verified = try verifyRegistration(
            response, challenge: registration.challenge, mediation: .modal,
            accountID: registration.prospectiveAccountID)
        let now = clock()
        let account = Account(
            id: registration.prospectiveAccountID, displayName: displayName.value, userHandle: registration.userHandle,
            createdAt: now)
        let accountEmail = AccountEmail(accountID: account.id, address: email, createdAt: now)
        let credential = try storedCredential(verified, accountID: account.id)
        let pending = sessions.newSession(accountID: account.id, method: .passkey, passkey: credential.id)
        try await accounts.createPasskeyAccount(
            account, email: accountEmail, credential: credential,
            completing: registrationID,
            verification: try codeKeys.map { keys in
                try OneTimeCodes.delivery(
                    accountID: account.id, emailID: accountEmail.id, address: accountEmail.email,
                    purpose: .verification, random: random, keys: keys, now: now)
            },
            session: pending.session)
        logger.audit(
            .accountCreated,
            ["account.id": account.id.description, "method": "passkey", "format": verified.attestationFormat.rawValue])
        logger.audit(.emailVerificationSent, ["account.id": account.id.description])
        AdoptionMetrics.registered(metrics, mode: RegistrationMode.modal.rawValue)
        AdoptionMetrics.signedIn(metrics, method: AuthenticationMethod.passkey.rawValue)
        return (account, try await sessions.issue(pending, displayName: account.displayName))
    }

    /// The outcome of a passkey sign-in: the session it issued.
    public struct SignIn: Sendable {
        public let accountID: AccountID
        public let credentialID: CredentialID
        public let userVerified: Bool
        public let cloneWarning: Bool
        public let session: SessionIssuer.IssuedSession
    }

    /// Verifies an assertion and issues its session. Unknown or removed credentials, a userHandle of another
    /// account, and every failed check are `invalidCredentials` (with the WebAuthn reason where one applies); a
    /// challenge that is unknown, expired or used is `challengeUnavailable`, whatever else is wrong.
    ///
    /// One round trip when this replica used the passkey recently, else two: the assertion is checked first, against
    /// the challenge its signed client data carries, and then one statement (`PasskeySignInRepository`) consumes the
    /// challenge if it is that one, inserts the session from the passkey's row while that row still has the sign
    /// count, backup state and backup eligibility the check used, and records the use in the same commit when the
    /// use changes them (`PasskeyUsage.changesSecurityState`; a changed backup eligibility, which
    /// `PASSKEY_BACKUP_ELIGIBILITY_CHANGE=update` accepts, with its `audit.passkey.backup_state_changed` event);
    /// otherwise the use's time goes to `lastUse`, written within seconds.
    /// When the row moved on (another sign-in, another replica's change) or is gone, nothing is written and the
    /// sign-in is decided again from a fresh read (see `CredentialCache`). A sign-in that fails is still single-use:
    /// its challenge is consumed on the way out.
    ///
    /// So there is never a consumed challenge with a recorded use and no session. If the statement fails, nothing
    /// was written, but the challenge is consumed so that it stays single-use, and the error (`unavailable`,
    /// `challenge_spent`) tells the client to start the sign-in again.
    public func finishAuthentication(challengeID: ChallengeID, response: AuthenticationResponse) async throws -> SignIn
    {
        let done = try await authenticate(challengeID: challengeID, response: response, reauthenticating: nil)
        return SignIn(
            accountID: done.accountID, credentialID: done.credentialID, userVerified: done.userVerified,
            cloneWarning: done.cloneWarning,
            session: try await sessions.issue(done.pending, displayName: done.displayName))
    }

    /// A fresh sign-in bound to a live session: the same assertion checks and single-use challenge as a sign-in, by a
    /// passkey of the session's account, moving the session's sign-in time to now instead of issuing a session (in
    /// the same one statement). `invalidCredentials` as at sign-in, also for a passkey of another account;
    /// `unauthenticated` when the session is no longer live (the challenge is spent).
    public func reauthenticate(
        sessionID: SessionID, of accountID: AccountID, challengeID: ChallengeID, response: AuthenticationResponse
    ) async throws {
        _ = try await authenticate(
            challengeID: challengeID, response: response,
            reauthenticating: PasskeySignInRecord.Reauthentication(sessionID: sessionID, accountID: accountID))
    }

    /// What a verified assertion came to: its session pending (issued by a sign-in, unused by a reauthentication).
    private struct Authenticated {
        let accountID: AccountID
        let credentialID: CredentialID
        let userVerified: Bool
        let cloneWarning: Bool
        let pending: SessionIssuer.PendingSession
        let displayName: String
    }

    private func authenticate(
        challengeID: ChallengeID, response: AuthenticationResponse,
        reauthenticating reauthentication: PasskeySignInRecord.Reauthentication?
    ) async throws -> Authenticated {
        guard let credentialID = CredentialID(response.credentialID) else {
            try await spend(challengeID)
            throw malformedCredentialID()
        }
        var fromCache = true
        var found = credentials.credential(credentialID)
        if found == nil {
            fromCache = false
            found = try await passkeys.find(credentialID: credentialID)
        }
        guard var stored = found else {
            try await spend(challengeID)
            throw unknownCredential()
        }
        for attempt in 0..<3 {
            if attempt > 0 {
                credentials.remove(credentialID)
                guard let fresh = try await passkeys.find(credentialID: credentialID) else {
                    try await spend(challengeID)
                    throw unknownCredential()
                }
                stored = fresh
                fromCache = false
            }
            let accountID = stored.credential.accountID
            if let reauthentication, reauthentication.accountID != accountID {
                try await spend(challengeID)
                throw signInFailed("other_account", accountID: accountID)
            }
            let verified: VerifiedAuthentication
            let signedChallenge: [UInt8]
            switch verifyAssertion(response, against: stored) {
            case .success(let value):
                (verified, signedChallenge) = value
            case .failure(let error):
                // A cached count can be ahead of the stored one only if another replica lowered it; read again.
                if fromCache && error.code == .signCountRegressed { continue }
                try await spend(challengeID)
                throw signInFailed(error.code.rawValue, accountID: accountID)
            }
            let pending = sessions.newSession(accountID: accountID, method: .passkey, passkey: stored.credential.id)
            let session = pending.session
            let usage = PasskeyUsage(
                signCount: verified.newSignCount, backedUp: verified.backedUp,
                backupEligible: verified.backupEligibilityChanged ? verified.backupEligible : nil,
                cloneWarning: verified.possiblyCloned, usedAt: session.createdAt)
            let durable = usage.changesSecurityState(of: stored.credential)
            let outcome: PasskeySignInOutcome
            do {
                outcome = try await signIns.completeSignIn(
                    PasskeySignInRecord(
                        challengeID: challengeID, challenge: signedChallenge, credentialID: credentialID,
                        expectedSignCount: stored.credential.signCount, expectedBackedUp: stored.credential.backedUp,
                        expectedBackupEligible: stored.credential.backupEligible, usage: durable ? usage : nil,
                        session: session, reauthenticating: reauthentication))
            } catch {
                logger.audit(
                    .signInFailed,
                    [
                        "method": "passkey", "reason": "not_recorded", "account.id": accountID.description,
                        "detail": String(describing: error),
                    ])
                try? await spend(challengeID)
                throw DomainError(
                    .unavailable,
                    "The sign-in could not be recorded and its challenge is spent; start the sign-in again.",
                    reason: "challenge_spent")
            }
            switch outcome {
            case .signedIn(let displayName):
                if verified.possiblyCloned {
                    logger.audit(.passkeyCloneWarning, ["account.id": accountID.description])
                }
                // Logged while `stored` still has the flags the assertion was checked against.
                if verified.backupEligibilityChanged {
                    logger.audit(
                        .passkeyBackupStateChanged,
                        [
                            "account.id": accountID.description,
                            "credential.id": Base64URL.encode(credentialID.bytes),
                            "backup_eligible.old": String(stored.credential.backupEligible),
                            "backup_eligible.new": String(verified.backupEligible),
                            "backed_up.old": String(stored.credential.backedUp),
                            "backed_up.new": String(verified.backedUp),
                        ])
                }
                if durable {
                    stored.credential.signCount = verified.newSignCount
                    stored.credential.backedUp = verified.backedUp
                    stored.credential.backupEligible = verified.backupEligible
                    stored.credential.cloneWarning = stored.credential.cloneWarning || verified.possiblyCloned
                } else {
                    lastUse.note(credentialID, at: usage.usedAt)
                }
                stored.displayName = displayName
                credentials.store(stored)
                if let reauthentication {
                    logger.audit(
                        .sessionReauthenticated,
                        [
                            "method": "passkey", "account.id": accountID.description,
                            "session.id": reauthentication.sessionID.description,
                            "credential.id": Base64URL.encode(credentialID.bytes),
                        ])
                } else {
                    logger.audit(
                        .signInSucceeded,
                        [
                            "method": "passkey", "account.id": accountID.description,
                            "session.id": session.id.description, "credential.id": Base64URL.encode(credentialID.bytes),
                            "clone_warning": String(verified.possiblyCloned),
                        ])
                    AdoptionMetrics.signedIn(metrics, method: AuthenticationMethod.passkey.rawValue)
                }
                return Authenticated(
                    accountID: accountID, credentialID: credentialID, userVerified: verified.userVerified,
                    cloneWarning: verified.possiblyCloned, pending: pending, displayName: displayName)
            case .passkeyChanged:
                // Nothing was written: decide again on what is stored now.
                continue
            case .challengeUnavailable:
                // Used, expired or unknown; or another challenge than the one signed, which is consumed here.
                try await spend(challengeID)
                throw signInFailed(WebAuthnError.Code.challengeMismatch.rawValue, accountID: accountID)
            case .concurrentUse:
                credentials.remove(credentialID)
                throw signInFailed("concurrent_use", accountID: accountID)
            case .sessionEnded:
                throw DomainError(.unauthenticated, "the session to reauthenticate is no longer live")
            case .accountDisabled:
                logger.audit(
                    .signInFailed,
                    ["method": "passkey", "reason": "account_disabled", "account.id": accountID.description])
                throw DomainError(.accountDisabled, "this account is disabled")
            }
        }
        credentials.remove(credentialID)
        try await spend(challengeID)
        throw signInFailed("concurrent_use", accountID: stored.credential.accountID)
    }

    /// Consumes the challenge of a sign-in that will not succeed, so it stays single-use. Throws
    /// `challengeUnavailable` when it was unknown, expired or used: that decides the answer before any other failure.
    private func spend(_ challengeID: ChallengeID) async throws {
        _ = try await challenges.consumeAuthentication(challengeID: challengeID)
    }

    private func signInFailed(_ reason: String, accountID: AccountID) -> DomainError {
        logger.audit(.signInFailed, ["method": "passkey", "reason": reason, "account.id": accountID.description])
        if reason == "concurrent_use" {
            return DomainError(
                .invalidCredentials, "the passkey was used by another sign-in at the same moment; try again")
        }
        return DomainError(.invalidCredentials, "the passkey sign-in failed a check", reason: reason)
    }

    /// A well-formed credential ID that no passkey has (or no longer has).
    private func unknownCredential() -> DomainError {
        logger.audit(.signInFailed, ["method": "passkey", "reason": Self.unknownCredentialReason])
        return DomainError(.invalidCredentials, "the passkey is not registered", reason: Self.unknownCredentialReason)
    }

    /// A credential ID no authenticator could have made (empty, or over the limit): refused, but not called unknown.
    private func malformedCredentialID() -> DomainError {
        logger.audit(.signInFailed, ["method": "passkey", "reason": "malformed_credential_id"])
        return DomainError(.invalidCredentials, "the credential ID is empty or too long")
    }

    /// The same ceremonies, naming new passkeys after their providers in `catalog`.
    public func naming(with catalog: PasskeyProviderCatalog) -> PasskeyCeremonies {
        var copy = self
        copy.providers = catalog
        return copy
    }

    /// §7.2 for one stored credential, against the challenge the signed client data carries (the database then
    /// requires it to be the stored one). Discoverable sign-in: the user handle is required and must be the
    /// credential's account's.
    private func verifyAssertion(_ response: AuthenticationResponse, against stored: PasskeyCredentialWithOwner)
        -> Result<(VerifiedAuthentication, challenge: [UInt8]), WebAuthnError>
    {
        guard response.userHandle != nil else {
            return .failure(WebAuthnError(.userHandleMismatch, "userHandle is required for discoverable sign-in"))
        }
        do {
            let signedChallenge = try ClientData(json: response.clientDataJSON).challenge
            let publicKey = try keys.key(for: stored.credential.publicKey)
            let verified = try authenticationVerifier.verify(
                response: response,
                expectation: AuthenticationExpectation(
                    challenge: signedChallenge, relyingPartyID: relyingPartyID, origins: origins,
                    userVerification: options.authenticationUserVerification),
                credential: StoredCredential(
                    id: stored.credential.credentialID.bytes, publicKey: publicKey,
                    userHandle: stored.userHandle.bytes, signCount: stored.credential.signCount,
                    backupEligible: stored.credential.backupEligible))
            return .success((verified, signedChallenge))
        } catch {
            return .failure(error)
        }
    }

    public func credentials(of accountID: AccountID) async throws -> [PasskeyCredential] {
        try await passkeys.credentials(of: accountID)
    }

    /// The account's passkeys and its user handle (nil for no such account), read at once: what the Signal API's
    /// `signalAllAcceptedCredentials` takes.
    public func passkeyListing(of accountID: AccountID) async throws
        -> (userHandle: UserHandle?, credentials: [PasskeyCredential])
    {
        async let credentials = passkeys.credentials(of: accountID)
        async let account = accounts.account(id: accountID)
        return try await (account?.userHandle, credentials)
    }

    /// Renames one of the account's passkeys. Throws `invalidRequest` or `notFound`.
    public func rename(credentialID: CredentialID, of accountID: AccountID, to rawName: String) async throws
        -> PasskeyCredential
    {
        let name = try DisplayName.validated(rawName, field: "name")
        guard let renamed = try await passkeys.rename(credentialID: credentialID, of: accountID, to: name.value) else {
            throw DomainError(.notFound, "no such passkey")
        }
        return renamed
    }

    /// Removes one of the account's passkeys, never its last way to sign in.
    public func remove(credentialID: CredentialID, of accountID: AccountID) async throws {
        credentials.remove(credentialID)
        try await passkeys.remove(credentialID: credentialID, of: accountID)
        logger.audit(
            .passkeyRemoved,
            ["account.id": accountID.description, "credential.id": Base64URL.encode(credentialID.bytes)])
    }

    private func verifyRegistration(
        _ response: RegistrationResponse, challenge: [UInt8], mediation: RegistrationMediation, accountID: AccountID
    ) throws -> VerifiedRegistration {
        var verifier = registrationVerifier
        if let metadata {
            var trust = verifier.trust
            trust.refusedAAGUIDs = metadata.refusedAAGUIDs
            // A model the BLOB gives roots for must chain to them; configured per-model roots come first.
            trust.rootsByAAGUID.merge(metadata.attestationRoots) { configured, _ in configured }
            verifier = RegistrationVerifier(policy: verifier.policy, trust: trust)
        }
        do {
            return try verifier.verify(
                response: response,
                expectation: RegistrationExpectation(
                    challenge: challenge, relyingPartyID: relyingPartyID, origins: origins,
                    userVerification: options.registrationUserVerification(for: mediation), mediation: mediation,
                    allowedAlgorithms: options.algorithms),
                now: clock())
        } catch {
            logger.audit(
                .passkeyRegistrationFailed, ["account.id": accountID.description, "reason": error.code.rawValue])
            throw DomainError(.verificationFailed, "the registration failed a check", reason: error.code.rawValue)
        }
    }

    private func storedCredential(_ verified: VerifiedRegistration, accountID: AccountID) throws -> PasskeyCredential {
        guard let credentialID = CredentialID(verified.credentialID) else {
            throw DomainError(.verificationFailed, "credential ID is too long", reason: "credential_id_too_long")
        }
        return PasskeyCredential(
            id: UUID.randomV4(), credentialID: credentialID, accountID: accountID,
            publicKey: verified.credentialPublicKey,
            algorithm: verified.algorithm, signCount: verified.signCount, backupEligible: verified.backupEligible,
            backedUp: verified.backedUp, uvInitialized: verified.userVerified,
            transports: Array(verified.transports.prefix(16)), aaguid: Self.uuid(verified.aaguid),
            attestationFormat: verified.attestationFormat.rawValue, cloneWarning: false,
            name: providers.provider(for: Self.uuid(verified.aaguid))?.name ?? Self.defaultName,
            createdAt: clock(), lastUsedAt: nil)
    }

    /// The AAGUID as a UUID (its 16 bytes always form one).
    static func uuid(_ aaguid: AAGUID) -> UUID {
        let b = aaguid.bytes.count == 16 ? aaguid.bytes : [UInt8](repeating: 0, count: 16)
        return UUID(
            uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
    }
}
