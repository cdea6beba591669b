import ChallengeServiceCore
import Crypto
import Domain
import Foundation
import InMemoryStorage
import Observability
import Synchronization
import UseCaseTestSupport
import XCTest

/// `ChallengeUseCases` without processes: what each start stores and returns, every refusal, the sweep, and stores
/// that fail, against in-memory ports with a fixed clock and recorded random draws.
final class ChallengeUseCasesTests: XCTestCase {
    static let challengeLifetime: TimeInterval = 300
    static let accountRegistrationLifetime: TimeInterval = 600
    static let window = ChallengeUseCases.conditionalWindow

    let clock = TestClock()
    let random = RecordingRandom()
    var passkeys: InMemoryPasskeys!
    var store: InMemoryAccounts!
    var useCases: ChallengeUseCases!

    override func setUp() {
        passkeys = InMemoryPasskeys(failure: StoreDown())
        store = InMemoryAccounts(passkeys: passkeys, clock: clock.read, failure: StoreDown())
        useCases = makeUseCases(authenticationChallenges: passkeys)
    }

    func makeUseCases(authenticationChallenges: any AuthenticationChallengeRepository) -> ChallengeUseCases {
        ChallengeUseCases(
            storage: ChallengeStorage(
                accounts: store, emails: store, passkeys: passkeys,
                registrationChallenges: store.registrationChallenges,
                authenticationChallenges: authenticationChallenges, accountRegistrations: store.accountRegistrations),
            relyingParty: .init(id: "example.com", name: "Example"), challengeLifetime: Self.challengeLifetime,
            accountRegistrationLifetime: Self.accountRegistrationLifetime, random: random, clock: clock.read,
            logger: Logger(service: "challenge-service", sink: DiscardingSink()), metrics: MetricsRegistry())
    }

    // MARK: Fixtures

    /// A stored account with `emails`, each created a second after the one before it.
    func storedAccount(name: String = "Ada Lovelace", emails: [String] = []) async throws -> Account {
        let account = Account(
            id: .random(), displayName: name, userHandle: UserHandle(SecureRandom().bytes(count: 32))!,
            createdAt: clock.now)
        try store.addAccount(account)
        for (offset, address) in emails.enumerated() {
            try await store.add(
                AccountEmail(
                    accountID: account.id, address: EmailAddress(address)!,
                    createdAt: clock.now.addingTimeInterval(TimeInterval(offset))))
        }
        return account
    }

    func passkey(of accountID: AccountID, createdAt: Date) -> PasskeyCredential {
        PasskeyCredential(
            id: UUID(), credentialID: CredentialID(SecureRandom().bytes(count: 16))!, accountID: accountID,
            publicKey: [0xA5], algorithm: -7, signCount: 0, backupEligible: true, backedUp: true, uvInitialized: true,
            transports: ["internal"], aaguid: UUID(), attestationFormat: "none", cloneWarning: false, name: "Passkey",
            createdAt: createdAt, lastUsedAt: nil)
    }

    var registrationChallenges: [ChallengeID: RegistrationChallenge] {
        store.state.withLock { $0.registrationChallenges }
    }
    var accountRegistrations: [AccountRegistrationID: AccountRegistration] {
        store.state.withLock { $0.accountRegistrations }
    }
    var authenticationChallenges: [ChallengeID: AuthenticationChallenge] { passkeys.state.withLock { $0.challenges } }

    func ago(_ seconds: TimeInterval) -> Date { clock.now.addingTimeInterval(-seconds) }
    func ahead(_ seconds: TimeInterval) -> Date { clock.now.addingTimeInterval(seconds) }

    // MARK: beginRegistration

    func testModalRegistrationStoresAChallengeWithItsModeAndExpiry() async throws {
        // The oldest by creation time: not the first inserted (the newer goes in first), nor the first by address.
        let account = try await storedAccount()
        try await store.add(
            AccountEmail(accountID: account.id, address: EmailAddress("ada@example.com")!, createdAt: clock.now))
        try await store.add(
            AccountEmail(accountID: account.id, address: EmailAddress("zoe@Example.COM")!, createdAt: ago(1)))
        let older = passkey(of: account.id, createdAt: ago(100))
        let newer = passkey(of: account.id, createdAt: ago(50))
        try await passkeys.add(newer)
        try await passkeys.add(older)
        let stranger = try await storedAccount(name: "Grace")
        try await passkeys.add(passkey(of: stranger.id, createdAt: ago(200)))

        let issued = try await useCases.beginRegistration(
            accountID: account.id, mode: .modal, sessionMethod: .password, sessionCreatedAt: ago(10))

        XCTAssertEqual(issued.account, account)
        XCTAssertEqual(issued.userName, "zoe@Example.COM", "the oldest email, as the user typed it")
        XCTAssertEqual(issued.excludeCredentials, [older, newer], "the account's passkeys only, oldest first")
        let challenge = issued.challenge
        XCTAssertEqual(challenge.accountID, account.id)
        XCTAssertEqual(challenge.mode, .modal)
        XCTAssertEqual(challenge.challenge.count, 32)
        XCTAssertEqual(random.draws, [challenge.challenge], "the challenge is the injected source's one draw")
        XCTAssertEqual(challenge.createdAt, clock.now)
        XCTAssertEqual(challenge.expiresAt, clock.now.addingTimeInterval(Self.challengeLifetime))
        XCTAssertNil(challenge.consumedAt)
        XCTAssertEqual(registrationChallenges, [challenge.id: challenge], "stored exactly as returned")
    }

    func testModalRegistrationAsksNothingOfTheSession() async throws {
        let account = try await storedAccount(emails: ["ada@example.com"])
        let sessions: [(AuthenticationMethod?, Date?)] = [
            (nil, nil), (.passkey, ago(10)), (.password, ago(86_400)), (.password, ahead(3_600)),
        ]
        for (method, createdAt) in sessions {
            let issued = try await useCases.beginRegistration(
                accountID: account.id, mode: .modal, sessionMethod: method, sessionCreatedAt: createdAt)
            XCTAssertEqual(issued.challenge.mode, .modal)
        }
        XCTAssertEqual(registrationChallenges.count, sessions.count)
    }

    func testConditionalRegistrationIsGrantedToAPasswordSessionInsideTheWindow() async throws {
        let account = try await storedAccount(emails: ["ada@example.com"])
        for age in [0, 60, Self.window - 1] {
            let issued = try await useCases.beginRegistration(
                accountID: account.id, mode: .conditional, sessionMethod: .password, sessionCreatedAt: ago(age))
            XCTAssertEqual(issued.challenge.mode, .conditional, "age \(age)")
            XCTAssertEqual(registrationChallenges[issued.challenge.id]?.mode, .conditional, "the mode is stored")
        }
    }

    func testConditionalRegistrationIsRefusedToOtherSessionsOldOnesAndOnesFromTheFuture() async throws {
        let account = try await storedAccount(emails: ["ada@example.com"])
        let refused: [(AuthenticationMethod?, Date?, String)] = [
            (.passkey, ago(10), "a passkey session"),
            (nil, ago(10), "no session"),
            (.password, nil, "no sign-in time"),
            (.password, ago(Self.window), "exactly the window old"),
            (.password, ago(3_600), "an hour old"),
            (.password, ahead(60), "a minute in the future"),
            (.password, ahead(3_600), "an hour in the future"),
        ]
        for (method, createdAt, what) in refused {
            await assertThrowsDomainError(.forbidden, what) {
                _ = try await self.useCases.beginRegistration(
                    accountID: account.id, mode: .conditional, sessionMethod: method, sessionCreatedAt: createdAt)
            }
        }
        XCTAssertEqual(registrationChallenges, [:])
        XCTAssertEqual(random.draws, [])
        XCTAssertFalse(store.state.withLock { $0.calls.contains(.account) }, "refused before the account is read")
    }

    func testAnUnknownAccountIsNotFoundInEitherMode() async throws {
        for mode in RegistrationMode.allCases {
            await assertThrowsDomainError(.notFound, mode.rawValue) {
                _ = try await self.useCases.beginRegistration(
                    accountID: .random(), mode: mode, sessionMethod: .password, sessionCreatedAt: self.clock.now)
            }
        }
        XCTAssertEqual(registrationChallenges, [:])
    }

    func testWithoutAnEmailTheUserNameIsTheDisplayName() async throws {
        let account = try await storedAccount(name: "Ada Lovelace")
        let issued = try await useCases.beginRegistration(
            accountID: account.id, mode: .modal, sessionMethod: nil, sessionCreatedAt: nil)
        XCTAssertEqual(issued.userName, "Ada Lovelace")
        XCTAssertEqual(issued.excludeCredentials, [])
    }

    // MARK: beginAccountRegistration

    func testAccountRegistrationStoresAProspectiveAccountAndWritesNoAccount() async throws {
        let registration = try await useCases.beginAccountRegistration(
            email: "  Grace@Example.com ", displayName: " Grace Hopper ")
        XCTAssertEqual(registration.email, "Grace@Example.com", "trimmed, as typed")
        XCTAssertEqual(registration.displayName, "Grace Hopper")
        XCTAssertEqual(registration.userHandle.bytes.count, 32)
        XCTAssertEqual(registration.challenge.count, 32)
        XCTAssertEqual(random.draws, [registration.userHandle.bytes, registration.challenge], "two separate draws")
        XCTAssertEqual(registration.createdAt, clock.now)
        XCTAssertEqual(registration.expiresAt, clock.now.addingTimeInterval(Self.accountRegistrationLifetime))
        XCTAssertNil(registration.consumedAt)
        XCTAssertNil(registration.completedAt)
        XCTAssertEqual(accountRegistrations, [registration.id: registration])
        let tables = store.state.withLock { ($0.accounts.count, $0.emails.count, $0.passwords.count) }
        XCTAssertTrue(tables == (0, 0, 0), "nothing in accounts, account_emails or password_credentials: \(tables)")

        let another = try await useCases.beginAccountRegistration(email: nil, displayName: nil)
        XCTAssertNotEqual(another.id, registration.id)
        XCTAssertNotEqual(another.prospectiveAccountID, registration.prospectiveAccountID)
        XCTAssertNotEqual(another.userHandle, registration.userHandle)
    }

    func testAccountRegistrationTakesNoEmailOrName() async throws {
        for (email, name) in [(nil, nil), ("", "")] as [(String?, String?)] {
            let registration = try await useCases.beginAccountRegistration(email: email, displayName: name)
            XCTAssertNil(registration.email)
            XCTAssertNil(registration.displayName)
        }
        XCTAssertEqual(accountRegistrations.count, 2)
    }

    func testAccountRegistrationRefusesABadEmailOrName() async throws {
        let tooLongEmail = String(repeating: "a", count: EmailAddress.maximumLength - 11) + "@example.com"
        let badEmails = [
            "ada", "ada@", "@example.com", "a@b@example.com", "ada lovelace@example.com", "   ", tooLongEmail,
        ]
        for email in badEmails {
            await assertThrowsDomainError(.invalidRequest, email) {
                _ = try await self.useCases.beginAccountRegistration(email: email, displayName: "Ada")
            }
        }
        let tooLongName = String(repeating: "x", count: DisplayName.maximumLength + 1)
        for name in ["   ", tooLongName, "Ada\u{7}", "Ada\nLovelace"] {
            await assertThrowsDomainError(.invalidRequest, name) {
                _ = try await self.useCases.beginAccountRegistration(email: "ada@example.com", displayName: name)
            }
        }
        XCTAssertEqual(accountRegistrations, [:])
        XCTAssertEqual(random.draws, [], "refused before anything is drawn")

        // The limits themselves are accepted.
        let longestEmail = String(tooLongEmail.dropFirst())
        let longestName = String(tooLongName.dropFirst())
        let registration = try await useCases.beginAccountRegistration(email: longestEmail, displayName: longestName)
        XCTAssertEqual(registration.email, longestEmail)
        XCTAssertEqual(registration.displayName, longestName)
    }

    // MARK: beginAuthentication

    func testAuthenticationChallengesAreFreshRandomAndStoredWithTheLifetime() async throws {
        let first = try await useCases.beginAuthentication()
        clock.advance(by: 1)
        let second = try await useCases.beginAuthentication()
        XCTAssertEqual(random.draws, [first.challenge, second.challenge])
        XCTAssertEqual(first.challenge.count, 32)
        XCTAssertNotEqual(first.challenge, second.challenge)
        XCTAssertNotEqual(first.id, second.id)
        XCTAssertEqual(second.createdAt, clock.now)
        XCTAssertEqual(second.expiresAt, clock.now.addingTimeInterval(Self.challengeLifetime))
        XCTAssertNil(second.consumedAt)
        XCTAssertEqual(authenticationChallenges, [first.id: first, second.id: second])
    }

    // MARK: Failing stores

    func testAFailingAccountReadOrChallengeWriteSurfacesAndStoresNothing() async throws {
        let account = try await storedAccount(emails: ["ada@example.com"])
        for operation in [InMemoryAccounts.Operation.account, .addRegistrationChallenge] {
            store.state.withLock { $0.failing = [operation] }
            await assertThrows(StoreDown(), "\(operation)") {
                _ = try await self.useCases.beginRegistration(
                    accountID: account.id, mode: .modal, sessionMethod: nil, sessionCreatedAt: nil)
            }
        }
        XCTAssertEqual(registrationChallenges, [:])
    }

    func testAFailingEmailReadSurfacesInsteadOfFallingBackToTheDisplayNameAndStoresNothing() async throws {
        let account = try await storedAccount(emails: ["ada@example.com"])
        store.state.withLock { $0.failing = [.emails] }
        await assertThrows(StoreDown()) {
            _ = try await self.useCases.beginRegistration(
                accountID: account.id, mode: .modal, sessionMethod: nil, sessionCreatedAt: nil)
        }
        XCTAssertEqual(registrationChallenges, [:], "a challenge stored for a start that failed")
    }

    func testAFailingAccountRegistrationWriteSurfacesAndStoresNothing() async throws {
        store.state.withLock { $0.failing = [.addAccountRegistration] }
        await assertThrows(StoreDown()) {
            _ = try await self.useCases.beginAccountRegistration(email: "grace@example.com", displayName: "Grace")
        }
        XCTAssertEqual(accountRegistrations, [:])
        XCTAssertEqual(store.state.withLock { $0.accounts.count }, 0)
    }

    func testAFailingAuthenticationChallengeWriteSurfaces() async throws {
        useCases = makeUseCases(authenticationChallenges: UnreachableAuthenticationChallenges())
        await assertThrows(StoreDown()) { _ = try await self.useCases.beginAuthentication() }
    }
}

/// `passkey_authentication_challenges` on a database that cannot be reached.
struct UnreachableAuthenticationChallenges: AuthenticationChallengeRepository {
    func add(_ challenge: AuthenticationChallenge) async throws { throw StoreDown() }
    func consume(id: ChallengeID) async throws -> Consumption<AuthenticationChallenge> { throw StoreDown() }
    func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int { throw StoreDown() }
}
