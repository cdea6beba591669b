import Domain
import Foundation
import Observability
import Postgres

/// `passkey_credentials`.
public struct PostgresPasskeyCredentialRepository: PasskeyCredentialRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    static let columns = """
        c.id, c.credential_id, c.account_id, c.public_key, c.algorithm, c.sign_count, c.backup_eligible, c.backed_up,
        c.uv_initialized, c.transports, c.aaguid, c.attestation_format, c.clone_warning, c.name, c.created_at,
        c.last_used_at
        """

    public func add(_ credential: PasskeyCredential) async throws {
        let audit = AuditTrail.row(
            .passkeyRegistered, account: credential.accountID,
            detail: ["credential.id": Self.auditID(credential.credentialID)])
        let notice = SecurityNotices().rows(.passkeyAdded, account: credential.accountID, device: credential.name)
        try await translatingErrors {
            try await pool.transaction { connection in
                try Self.insert(credential, on: connection)
                try connection.execute(audit)
                try connection.execute(notice)
            }
        }
    }

    public func find(credentialID: CredentialID) async throws -> PasskeyCredentialWithOwner? {
        try await translatingErrors {
            try await pool.query(
                """
                SELECT \(unsafeSQL: Self.columns), a.user_handle, a.display_name
                FROM passkey_credentials c JOIN accounts a ON a.id = c.account_id
                WHERE c.credential_id = \(PostgresBytes(credentialID.bytes))
                """
            ).first.map { row in
                guard let handle = UserHandle(try row.decode(PostgresBytes.self, "user_handle").bytes) else {
                    throw PostgresError(.decoding, "accounts.user_handle has an invalid length")
                }
                return PasskeyCredentialWithOwner(
                    credential: try Self.decode(row), userHandle: handle,
                    displayName: try row.decode(String.self, "display_name"))
            }
        }
    }

    public func credentials(of accountID: AccountID) async throws -> [PasskeyCredential] {
        try await translatingErrors {
            try await pool.query(
                """
                SELECT \(unsafeSQL: Self.columns) FROM passkey_credentials c
                WHERE c.account_id = \(accountID.rawValue) ORDER BY c.created_at, c.id
                """
            ).map(Self.decode)
        }
    }

    public func rename(credentialID: CredentialID, of accountID: AccountID, to name: String) async throws
        -> PasskeyCredential?
    {
        try await translatingErrors {
            try await pool.query(
                """
                UPDATE passkey_credentials c SET name = \(name)
                WHERE c.credential_id = \(PostgresBytes(credentialID.bytes)) AND c.account_id = \(accountID.rawValue)
                RETURNING \(unsafeSQL: Self.columns)
                """
            ).first.map(Self.decode)
        }
    }

    public func remove(credentialID: CredentialID, of accountID: AccountID) async throws {
        let audit = AuditTrail.row(
            .passkeyRemoved, account: accountID, detail: ["credential.id": Self.auditID(credentialID)])
        let notices = SecurityNotices()
        try await translatingErrors {
            try await pool.transaction { connection in
                let name = try Self.delete(credentialID, of: accountID, keepingLastMethod: true, on: connection)
                try connection.execute(audit)
                try connection.execute(notices.rows(.passkeyRemoved, account: accountID, device: name))
            }
        }
    }

    /// Deletes the account's passkey inside a transaction; `keepingLastMethod` refuses to delete the account's last
    /// way to sign in (`DomainError.lastSignInMethod`). `DomainError.notFound` when there is no such passkey. Returns
    /// the deleted passkey's name.
    @discardableResult
    static func delete(
        _ credentialID: CredentialID, of accountID: AccountID, keepingLastMethod: Bool,
        on connection: PostgresConnection
    ) throws -> String? {
        // Locking the account row serializes removals on one account, so two concurrent removals cannot each see
        // the other's passkey as the remaining way to sign in.
        let locked = try connection.execute("SELECT id FROM accounts WHERE id = \(accountID.rawValue) FOR UPDATE")
        guard !locked.isEmpty else { throw DomainError(.notFound, "no such passkey") }
        let counts = try connection.execute(
            """
            SELECT EXISTS (SELECT 1 FROM passkey_credentials
                           WHERE account_id = \(accountID.rawValue)
                             AND credential_id = \(PostgresBytes(credentialID.bytes))) AS exists,
                   EXISTS (SELECT 1 FROM password_credentials
                           WHERE account_id = \(accountID.rawValue)) AS has_password,
                   (SELECT count(*) FROM passkey_credentials
                    WHERE account_id = \(accountID.rawValue)) AS passkey_count
            """)
        guard let row = counts.first, try row.decode(Bool.self, "exists") else {
            throw DomainError(.notFound, "no such passkey")
        }
        if keepingLastMethod {
            try SignInMethods(
                hasPassword: try row.decode(Bool.self, "has_password"),
                passkeyCount: try row.decode(Int.self, "passkey_count")
            ).checkPasskeyRemoval()
        }
        return try connection.execute(
            """
            DELETE FROM passkey_credentials
            WHERE account_id = \(accountID.rawValue) AND credential_id = \(PostgresBytes(credentialID.bytes))
            RETURNING name
            """
        ).first?.decode(String.self, "name")
    }

    static func insert(_ credential: PasskeyCredential, on connection: PostgresConnection) throws {
        try connection.execute(
            """
            INSERT INTO passkey_credentials (
                id, credential_id, account_id, public_key, algorithm, sign_count, backup_eligible, backed_up,
                uv_initialized, transports, aaguid, attestation_format, clone_warning, name, created_at, last_used_at)
            VALUES (
                \(credential.id), \(PostgresBytes(credential.credentialID.bytes)), \(credential.accountID.rawValue),
                \(PostgresBytes(credential.publicKey)), \(Int32(credential.algorithm)), \(Int64(credential.signCount)),
                \(credential.backupEligible), \(credential.backedUp), \(credential.uvInitialized),
                \(PostgresTextArray(credential.transports)), \(credential.aaguid), \(credential.attestationFormat),
                \(credential.cloneWarning), \(credential.name), \(credential.createdAt), \(credential.lastUsedAt))
            """)
    }

    static func decode(_ row: PostgresRow) throws -> PasskeyCredential {
        guard let credentialID = CredentialID(try row.decode(PostgresBytes.self, "credential_id").bytes) else {
            throw PostgresError(.decoding, "passkey_credentials.credential_id has an invalid length")
        }
        return PasskeyCredential(
            id: try row.decode(UUID.self, "id"), credentialID: credentialID,
            accountID: AccountID(try row.decode(UUID.self, "account_id")),
            publicKey: try row.decode(PostgresBytes.self, "public_key").bytes,
            algorithm: try row.decode(Int.self, "algorithm"), signCount: try row.decode(UInt32.self, "sign_count"),
            backupEligible: try row.decode(Bool.self, "backup_eligible"),
            backedUp: try row.decode(Bool.self, "backed_up"),
            uvInitialized: try row.decode(Bool.self, "uv_initialized"),
            transports: try row.decode(PostgresTextArray.self, "transports").elements,
            aaguid: try row.decode(UUID.self, "aaguid"),
            attestationFormat: try row.decode(String.self, "attestation_format"),
            cloneWarning: try row.decode(Bool.self, "clone_warning"), name: try row.decode(String.self, "name"),
            createdAt: try row.decode(Date.self, "created_at"), lastUsedAt: try row.decode(Date?.self, "last_used_at"))
    }
}
