import Crypto
import Domain
import Foundation
import Postgres
import PostgresStorage
import PostgresTestSupport
import Webhooks
import XCTest

/// What the outbox, the codes and the webhook endpoints keep at rest (migration 0018): sealed codes and secrets with
/// the key that sealed them, keyed digests with theirs; rows written before, in clear, still read until they go.
final class SecretsAtRestRepositoryTests: StorageTestCase {
    let keys = SecretKeyRing(keys: [Array(repeating: 7, count: 32)])!

    func target(_ address: String = "ada@example.com") async throws -> RecoveryTarget {
        _ = try await storedPasswordAccount(email: address)
        let found = try await storage.recovery.target(normalizedEmail: address)
        return try XCTUnwrap(found)
    }

    func testAnIssuedCodeIsStoredAsAKeyedDigestAndASealedCodeClearedOnceSent() async throws {
        let target = try await target()
        let delivery = try OneTimeCodesForTests.delivery(for: target, keys: keys)
        try await storage.recovery.issue(delivery)
        let rows = try await pool.query(
            """
            SELECT c.digest_key_id, o.code, o.sealed_code, o.code_key_id
            FROM email_codes c, email_outbox o WHERE c.id = \(delivery.code.id) AND o.id = \(delivery.message.id)
            """)
        let row = try XCTUnwrap(rows.first)
        XCTAssertEqual(try row.decode(String?.self, "digest_key_id"), keys.currentKeyID)
        XCTAssertNil(try row.decode(String?.self, "code"), "no code in clear")
        XCTAssertEqual(try row.decode(String?.self, "code_key_id"), keys.currentKeyID)
        guard case .sealed(_, let box) = delivery.message.code else { return XCTFail("sealed") }
        XCTAssertEqual(try row.decode(PostgresBytes?.self, "sealed_code")?.bytes, box)
        let attempt = try await storage.recovery.attempt(
            emailID: target.emailID, purpose: .recovery, maximumAttempts: 5,
            claiming: RecoveryRepositoryTests.charge(target))
        XCTAssertEqual(attempt?.digestKeyID, keys.currentKeyID)
        XCTAssertEqual(attempt?.codeDigest, delivery.code.codeDigest)

        let handed = try await storage.outbox.deliverNext { message in
            XCTAssertEqual(message.code, delivery.message.code, "handed out sealed, for the worker to open")
            return .delivered
        }
        XCTAssertTrue(handed)
        let left = try await pool.query(
            "SELECT count(*) AS n FROM email_outbox WHERE sealed_code IS NOT NULL OR code_key_id IS NOT NULL")
        XCTAssertEqual(try left.first?.decode(Int.self, "n"), 0, "cleared once sent")
    }

    func testRowsWrittenBeforeSealingStillReadUntilTheyGo() async throws {
        let target = try await target()
        let messageID = UUID()
        let codeID = UUID()
        _ = try await pool.query(
            """
            INSERT INTO email_outbox (id, recipient, template, code, expires_at)
            VALUES (\(messageID), \(target.address), 'recovery_code', '01234567', now() + interval '10 minutes')
            """)
        _ = try await pool.query(
            """
            INSERT INTO email_codes (id, account_id, email_id, purpose, salt, code_digest, expires_at)
            VALUES (\(codeID), \(target.accountID.rawValue), \(target.emailID), 'recovery', \(PostgresBytes(randomBytes(16))),
                    \(PostgresBytes(randomBytes(32))), now() + interval '10 minutes')
            """)
        let code = try await storage.recovery.attempt(
            emailID: target.emailID, purpose: .recovery, maximumAttempts: 5,
            claiming: RecoveryRepositoryTests.charge(target))
        XCTAssertEqual(code?.id, codeID)
        XCTAssertNil(code?.digestKeyID, "an unkeyed digest")
        let handed = try await storage.outbox.deliverNext { message in
            XCTAssertEqual(message.code, .clear("01234567"))
            return .delivered
        }
        XCTAssertTrue(handed)
        let left = try await pool.query("SELECT count(*) AS n FROM email_outbox WHERE code IS NOT NULL")
        XCTAssertEqual(try left.first?.decode(Int.self, "n"), 0, "the code in clear goes once sent")
    }

    func testACodeInClearIsNeverWrittenAndASealedOneNeedsItsKey() async throws {
        let target = try await target()
        var clear = try OneTimeCodesForTests.delivery(for: target, keys: keys)
        clear.message.code = .clear("01234567")
        await assertDomainError(.unavailable) { try await self.storage.recovery.issue(clear) }
        let rows = try await pool.query(
            "SELECT (SELECT count(*) FROM email_outbox) + (SELECT count(*) FROM email_codes) AS n")
        XCTAssertEqual(try rows.first?.decode(Int.self, "n"), 0, "neither the message nor its code")
        do {
            _ = try await pool.query(
                """
                INSERT INTO email_outbox (id, recipient, template, sealed_code, expires_at)
                VALUES (\(UUID()), 'ada@example.com', 'recovery_code', \(PostgresBytes(randomBytes(36))), now() + interval '1 minute')
                """)
            XCTFail("a sealed code without its key's ID")
        } catch let error as PostgresError {
            XCTAssertEqual(error.code, .server)
        }
    }

    func testWebhookSecretsAreStoredSealedAndAnOldOneInClearIsSealedOnce() async throws {
        let webhooks = PostgresWebhookRepository(pool: pool)
        let secret = WebhookSecret(random: SecureRandom())
        let id = UUID()
        let created = try await webhooks.createEndpoint(
            id: id, url: "https://hooks.example.com/a", eventTypes: ["*"], description: "",
            secret: try secret.sealed(for: id, with: keys))
        XCTAssertEqual(created?.id, id)
        let stored = try await pool.query("SELECT secret, secret_key_id FROM webhook_endpoints WHERE id = \(id)")
        let bytes = try XCTUnwrap(stored.first?.decode(PostgresBytes.self, "secret").bytes)
        XCTAssertEqual(bytes.count, 60)
        XCTAssertNil(bytes.firstRange(of: secret.bytes), "not in clear")
        XCTAssertEqual(try stored.first?.decode(String?.self, "secret_key_id"), keys.currentKeyID)
        let none = try await webhooks.secrets(notSealedUnder: keys.currentKeyID, limit: 10)
        XCTAssertTrue(none.isEmpty)

        // An endpoint registered before secrets were sealed.
        let old = UUID()
        let oldSecret = WebhookSecret(random: SecureRandom())
        _ = try await pool.query(
            """
            INSERT INTO webhook_endpoints (id, url, event_types, secret, created_by)
            VALUES (\(old), 'https://hooks.example.com/b', '{*}', \(PostgresBytes(oldSecret.bytes)), 'admin:test')
            """)
        let found = try await webhooks.secrets(notSealedUnder: keys.currentKeyID, limit: 10)
        XCTAssertEqual(found.map(\.endpointID), [old])
        XCTAssertEqual(found.first?.secret, .clear(oldSecret))
        let sealed = try oldSecret.sealed(for: old, with: keys)
        let replaced = try await webhooks.replaceSecret(of: old, stored: .clear(oldSecret), with: sealed)
        let again = try await webhooks.replaceSecret(
            of: old, stored: .clear(oldSecret), with: try oldSecret.sealed(for: old, with: keys))
        XCTAssertTrue(replaced)
        XCTAssertFalse(again, "sealed once: the second replica finds it changed")
        let after = try await webhooks.secrets(notSealedUnder: keys.currentKeyID, limit: 10)
        XCTAssertTrue(after.isEmpty)
        // Deliveries lease it sealed, and it opens to the same secret.
        _ = try await pool.query(
            """
            INSERT INTO audit_events (type, account_id, actor, detail) VALUES ('audit.account.created', NULL, 'system', '{}')
            """)
        let batches = try await webhooks.lease(endpoints: 2, batch: 1, lease: 30)
        for batch in batches {
            guard case .sealed = batch.secret else { return XCTFail("leased sealed") }
        }
        let leased = try XCTUnwrap(batches.first { $0.endpointID == old })
        XCTAssertEqual(leased.secret.open(for: old, with: keys), oldSecret)
        XCTAssertNil(leased.secret.open(for: id, with: keys), "bound to its endpoint")
    }
}

/// `OneTimeCodes.delivery` without the module: the shape the use cases store, built the same way.
enum OneTimeCodesForTests {
    static func delivery(for target: RecoveryTarget, keys: SecretKeyRing) throws -> EmailCodeDelivery {
        let now = microsecondDate()
        let salt = SecureRandom().bytes(count: 16)
        let code = "01234567"
        let (keyID, digest) = keys.authenticationCode(salt + Array(code.utf8), for: .codeDigest)
        let messageID = UUID()
        let sealed = try keys.seal(
            Array(code.utf8), for: .outboxCode, context: Array(messageID.uuidString.lowercased().utf8))
        return EmailCodeDelivery(
            code: EmailCode(
                id: UUID(), accountID: target.accountID, emailID: target.emailID, purpose: .recovery, salt: salt,
                codeDigest: digest, digestKeyID: keyID, attempts: 0, createdAt: now,
                expiresAt: now.addingTimeInterval(600)),
            message: OutboxMessage(
                id: messageID, recipient: target.address, template: .recoveryCode,
                code: .sealed(keyID: sealed.keyID, box: sealed.box), expiresAt: now.addingTimeInterval(600),
                createdAt: now))
    }
}
