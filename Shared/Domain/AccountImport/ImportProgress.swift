/// The progress of a run as text: a bar for a terminal, a plain line otherwise. Pure: the caller passes the
/// numbers and the elapsed time.
public struct ImportProgress: Sendable {
    /// Bytes of input read, and the input's size when known (a file, not a pipe).
    public var bytesRead: Int64
    public var totalBytes: Int64?
    public var lines: Int
    public var elapsedSeconds: Double

    public init(bytesRead: Int64, totalBytes: Int64?, lines: Int, elapsedSeconds: Double) {
        self.bytesRead = bytesRead
        self.totalBytes = totalBytes
        self.lines = lines
        self.elapsedSeconds = elapsedSeconds
    }

    /// Lines per second so far.
    public var rate: Double { elapsedSeconds > 0 ? Double(lines) / elapsedSeconds : 0 }

    /// The share of the input read (0 to 1), when its size is known.
    public var fraction: Double? {
        guard let totalBytes, totalBytes > 0 else { return nil }
        return min(1, Double(bytesRead) / Double(totalBytes))
    }

    /// Seconds left at the rate so far, when the size is known and some input was read.
    public var remainingSeconds: Double? {
        guard let fraction, fraction > 0, elapsedSeconds > 0 else { return nil }
        return elapsedSeconds * (1 - fraction) / fraction
    }

    /// `[#########-----------]  45%  450000 lines  52000 lines/s  ETA 0:11`, for a terminal line rewritten in place.
    public func bar(width: Int = 30) -> String {
        var text = ""
        if let fraction {
            let filled = Int((fraction * Double(width)).rounded(.down))
            text += "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            text += pad(String(Int((fraction * 100).rounded(.down))), 3) + "%  "
        }
        text += "\(lines) lines  \(Int(rate)) lines/s"
        if let remainingSeconds { text += "  ETA " + Self.duration(remainingSeconds) }
        return text
    }

    /// `progress: 450000 lines, 45% of the input, 52000 lines/s, about 11 s left`, for logs.
    public func line() -> String {
        var text = "progress: \(lines) lines"
        if let fraction { text += ", \(Int((fraction * 100).rounded(.down)))% of the input" }
        text += ", \(Int(rate)) lines/s"
        if let remainingSeconds { text += ", about \(Int(remainingSeconds.rounded(.up))) s left" }
        return text
    }

    /// `m:ss`, or `h:mm:ss` beyond an hour.
    public static func duration(_ seconds: Double) -> String {
        let total = Int(max(0, seconds).rounded(.up))
        let (hours, minutes, rest) = (total / 3600, total / 60 % 60, total % 60)
        let mmss = (hours > 0 ? pad(String(minutes), 2, "0") : String(minutes)) + ":" + pad(String(rest), 2, "0")
        return hours > 0 ? "\(hours):" + mmss : mmss
    }
}

private func pad(_ text: String, _ width: Int, _ filler: Character = " ") -> String {
    String(repeating: filler, count: max(0, width - text.count)) + text
}
