import Foundation

/// What an account's budget of failed guesses counts, each kind apart: wrong passwords never lock the account's
/// recovery, wrong codes never lock its password, and neither touches passkey sign-in.
public enum GuessKind: String, Hashable, Sendable, CaseIterable {
    /// Password sign-ins.
    case password
    /// One-time codes: email codes (recovery and address verification) and recovery codes.
    case code
}

/// An account's failed guesses of one kind, as stored (`failed_guesses`): the level of a leaky bucket at a moment.
/// Each failed guess adds one; the level drains at the limit's rate.
public struct FailedGuesses: Hashable, Sendable {
    /// Failed guesses not yet drained at `updatedAt`.
    public var level: Double
    public var updatedAt: Date

    public init(level: Double, updatedAt: Date) {
        self.level = level
        self.updatedAt = updatedAt
    }
}

/// One guess to add to an account's failed guesses of a kind, drained by `limit`, at `now`.
public struct GuessCharge: Hashable, Sendable {
    public var accountID: AccountID
    public var kind: GuessKind
    public var limit: GuessLimit
    public var now: Date

    public init(accountID: AccountID, kind: GuessKind, limit: GuessLimit, now: Date) {
        self.accountID = accountID
        self.kind = kind
        self.limit = limit
        self.now = now
    }
}

/// `failed_guesses`: the budget of failed password sign-ins and code attempts each account has, one store for every
/// replica. Reading it is folded into the reads of the sign-in and recovery records.
public protocol FailedGuessRepository: Sendable {
    /// Adds one failed guess to the account's level of the charge's kind, drained to `now` first; one statement.
    func countFailedGuess(_ charge: GuessCharge) async throws
    /// Adds one guess to the level only if it then holds no more than the limit's capacity; one statement. False
    /// (nothing written) when there is no room: the guess must be refused unchecked.
    func claimGuess(_ charge: GuessCharge) async throws -> Bool
}

/// At most `limit` failed guesses per account and kind in any `period` (ASVS 4.0 2.2.1: at most 100 an hour).
///
/// A leaky bucket of `capacity` (half the limit) that drains `capacity` per period: a burst of half the limit, then
/// one guess each time one drains (every 72 s at 100 an hour), so no window of one period holds more than the
/// burst plus what drained in it, the limit. A guess that finds the bucket full is refused before anything is
/// checked, whether the password or code is right or not; that is the temporary lock, and it lasts while guessing
/// goes on. Passkey sign-in never reads the budget.
///
/// The level is read with the account (no statement of its own), and a failed guess adds to it in one statement,
/// so a sign-in that succeeds costs nothing extra. Guesses racing on several replicas all read the level before any
/// of them has added to it; from `claimLevel` on, a guess therefore claims its place in one conditional statement
/// before it is checked, and one the bucket has no room for is refused. Below it, racing guesses can overshoot
/// `claimLevel` by as many as are checked at once, never the limit.
public struct GuessLimit: Hashable, Sendable {
    /// 100 failed guesses an hour.
    public static let standard = GuessLimit(limit: 100, period: 3600)

    /// Failed guesses allowed in any `period`.
    public let limit: Int
    public let period: TimeInterval

    /// A limit of at least 2 guesses in a positive period.
    public init(limit: Int, period: TimeInterval) {
        precondition(limit >= 2 && period > 0)
        self.limit = limit
        self.period = period
    }

    /// The most failed guesses the bucket holds: half the limit.
    public var capacity: Double { Double(limit) / 2 }

    /// How fast failed guesses drain: `capacity` a period.
    public var drainPerSecond: Double { capacity / period }

    /// The level above which the bucket is full: the capacity, and a millionth of a guess so that a guess made
    /// exactly when one has drained is not refused for a rounding error.
    public var fullLevel: Double { capacity + 1e-6 }

    /// The level from which a guess claims its place before it is checked: half the capacity.
    public var claimLevel: Double { capacity / 2 }

    /// The seconds one guess takes to drain: how long a refused guess waits for room at the least.
    public var secondsPerGuess: Int { max(1, Int((1 / drainPerSecond).rounded(.up))) }

    /// What to do with a guess.
    public enum Admission: Hashable, Sendable {
        /// Check it, and add it to the level if it fails.
        case check
        /// Claim its place first (``GuessLimit`` explains why), then check it; it is counted whatever the outcome.
        case claimThenCheck
        /// Refuse it unchecked: the bucket is full until then.
        case refuse(retryAfterSeconds: Int)
    }

    /// The level of `guesses` at `now`, drained since it was stored (a clock behind the stored time drains nothing).
    public func level(of guesses: FailedGuesses?, at now: Date) -> Double {
        guard let guesses else { return 0 }
        return max(0, guesses.level - max(0, now.timeIntervalSince(guesses.updatedAt)) * drainPerSecond)
    }

    /// Whether a guess at `now` may be checked, given the stored failed guesses.
    public func admission(of guesses: FailedGuesses?, at now: Date) -> Admission {
        let level = level(of: guesses, at: now)
        if level + 1 > fullLevel {
            let wait = (level + 1 - fullLevel) / drainPerSecond
            return .refuse(retryAfterSeconds: max(1, Int(min(wait, period).rounded(.up))))
        }
        return level >= claimLevel ? .claimThenCheck : .check
    }
}

/// A guess `GuessLimit.admission` lets be checked, with its place in the account's failed guesses claimed first
/// when the admission asks for it. A failed guess is counted once: by its claim, or by `failed()`; one that succeeds
/// costs nothing more than its claim.
public struct AdmittedGuess: Sendable {
    /// The failed guesses the guess counts against.
    let store: any FailedGuessRepository
    let charge: GuessCharge
    /// Whether the guess claimed its place, and so is counted already.
    let claimed: Bool

    /// The guess, if `admission` lets it be checked: `claimThenCheck` claims its place first (one statement), and
    /// nil means it may not be checked (the admission refuses it, or the claim found no room).
    public static func admit(
        _ charge: GuessCharge, _ admission: GuessLimit.Admission, in store: any FailedGuessRepository
    ) async throws -> AdmittedGuess? {
        switch admission {
        case .check:
            return AdmittedGuess(store: store, charge: charge, claimed: false)
        case .claimThenCheck:
            guard try await store.claimGuess(charge) else { return nil }
            return AdmittedGuess(store: store, charge: charge, claimed: true)
        case .refuse:
            return nil
        }
    }

    /// A guess's fate: checked (claimed first where the admission asks), or refused for these seconds.
    public enum Outcome: Sendable {
        case admitted(AdmittedGuess)
        case refused(retryAfterSeconds: Int)
    }

    /// The guess against the failed `guesses` read with the account: refused while the budget is spent (until one
    /// drains), claimed first near its end (refused when the claim finds no room), else admitted as it is.
    public static func admit(_ charge: GuessCharge, with guesses: FailedGuesses?, in store: any FailedGuessRepository)
        async throws -> Outcome
    {
        let admission = charge.limit.admission(of: guesses, at: charge.now)
        if case .refuse(let seconds) = admission { return .refused(retryAfterSeconds: seconds) }
        guard let guess = try await admit(charge, admission, in: store) else {
            return .refused(retryAfterSeconds: charge.limit.secondsPerGuess)
        }
        return .admitted(guess)
    }

    /// Counts the guess as failed (one statement), unless its claim counted it already.
    public func failed() async throws {
        if !claimed { try await store.countFailedGuess(charge) }
    }
}
