import Domain

/// A record that passed its own checks, with the line it came from.
public struct ImportCandidate: Sendable, Hashable {
    public let line: Int
    public let record: ImportRecord

    public init(line: Int, record: ImportRecord) {
        self.line = line
        self.record = record
    }
}

/// What the database holds about a batch's emails and externalIDs, read in the batch's transaction.
public struct BatchLookup: Sendable {
    /// Normalized emails that belong to an account, each with the record digest the account was imported from
    /// (nil for an account that was not imported).
    public var existingEmails: [String: [UInt8]?] = [:]
    /// externalIDs on an account.
    public var existingExternalIDs: Set<String> = []
    /// Normalized emails met on earlier lines of this run (imported or unchanged), with the first such line.
    public var seenEmails: [String: Int] = [:]
    /// externalIDs met on earlier lines of this run, with the first such line.
    public var seenExternalIDs: [String: Int] = [:]

    public init() {}
}

/// What becomes of one candidate.
public enum BatchDecision: Sendable, Hashable {
    /// A new account.
    case insert
    /// The account this very record made earlier exists: nothing to write.
    case unchanged
    case rejected(ImportReject)
}

/// The decisions of one batch: which lines make accounts, which are unchanged and which are refused, given what
/// the database holds. The first line of the input with an address (or externalID) wins; later ones are duplicates
/// naming it. An account that exists but was not made from this very record keeps its address.
public struct BatchClassification: Sendable {
    /// One decision per candidate, in the candidates' order.
    public let decisions: [BatchDecision]
    /// Normalized emails and externalIDs this batch met (inserted or unchanged), with their lines: the run
    /// remembers them so that later batches see their duplicates.
    public let newlySeenEmails: [(String, Int)]
    public let newlySeenExternalIDs: [(String, Int)]

    public init(_ candidates: [ImportCandidate], lookup: BatchLookup) {
        var decisions: [BatchDecision] = []
        decisions.reserveCapacity(candidates.count)
        var seenEmails: [String: Int] = [:]
        var seenExternalIDs: [String: Int] = [:]
        var newEmails: [(String, Int)] = []
        var newExternalIDs: [(String, Int)] = []
        for candidate in candidates {
            let record = candidate.record
            let normalized = record.email.normalized
            if let first = lookup.seenEmails[normalized] ?? seenEmails[normalized] {
                decisions.append(.rejected(ImportReject(.duplicateEmail, "the same email is on line \(first)")))
                continue
            }
            if let externalID = record.externalID,
                let first = lookup.seenExternalIDs[externalID] ?? seenExternalIDs[externalID]
            {
                decisions.append(
                    .rejected(ImportReject(.duplicateExternalID, "the same externalID is on line \(first)")))
                continue
            }
            let decision: BatchDecision
            if let existing = lookup.existingEmails[normalized] {
                if let digest = existing, digest == record.digest {
                    decision = .unchanged
                } else {
                    decision = .rejected(ImportReject(.emailTaken, "the email belongs to another account"))
                }
            } else if let externalID = record.externalID, lookup.existingExternalIDs.contains(externalID) {
                decision = .rejected(ImportReject(.externalIDTaken, "the externalID belongs to another account"))
            } else {
                decision = .insert
            }
            decisions.append(decision)
            if case .rejected = decision { continue }
            seenEmails[normalized] = candidate.line
            newEmails.append((normalized, candidate.line))
            if let externalID = record.externalID {
                seenExternalIDs[externalID] = candidate.line
                newExternalIDs.append((externalID, candidate.line))
            }
        }
        self.decisions = decisions
        self.newlySeenEmails = newEmails
        self.newlySeenExternalIDs = newExternalIDs
    }
}
