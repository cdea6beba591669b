/// The counts of a run, and their report.
public struct ImportSummary: Sendable, Hashable {
    public var imported = 0
    public var unchanged = 0
    public var blank = 0
    public var rejectedByReason: [ImportReject.Reason: Int] = [:]

    public init() {}

    public var rejected: Int { rejectedByReason.values.reduce(0, +) }
    /// Lines read so far: every line is imported, unchanged, blank or rejected.
    public var lines: Int { imported + unchanged + blank + rejected }

    public mutating func add(_ reject: ImportReject) { rejectedByReason[reject.reason, default: 0] += 1 }

    /// The report printed at the end of a run; `complete` is false when the run stopped before the end.
    public func report(complete: Bool) -> String {
        var text = complete ? "" : "stopped before the end of the input; the lines below were written:\n"
        text += "imported \(imported), skipped as unchanged \(unchanged), rejected \(rejected)"
        if blank > 0 { text += ", blank lines ignored \(blank)" }
        text += "\n"
        if complete && imported == 0 {
            text +=
                unchanged > 0
                ? "nothing changed: every accepted line was imported already\n"
                : "nothing changed: no account was created\n"
        }
        for (reason, count) in rejectedByReason.sorted(by: { $0.key < $1.key }) {
            text += "  rejected \(reason.rawValue): \(count)\n"
        }
        return text
    }
}

/// One line of the rejects file: the line number, the reason code and the detail, tab-separated.
public func rejectsFileLine(line: Int, _ reject: ImportReject) -> String {
    "\(line)\t\(reject.reason.rawValue)\t\(reject.detail)\n"
}
