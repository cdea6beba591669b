import AccountImport
import Foundation

/// Progress on standard error: a bar rewritten in place on a terminal, a plain line every few seconds otherwise.
final class ProgressDisplay {
    private let isTerminal = isatty(2) == 1
    private let started = Date()
    private lazy var lastShown = started
    private var drewBar = false

    var interval: TimeInterval { isTerminal ? 0.2 : 5 }

    /// Shows the progress when the interval has passed since the last time; `final` draws the finished bar (on a
    /// terminal only: the summary follows it).
    func show(bytesRead: Int64, totalBytes: Int64?, lines: Int, final force: Bool = false) {
        let now = Date()
        guard force ? isTerminal : now.timeIntervalSince(lastShown) >= interval else { return }
        lastShown = now
        let progress = ImportProgress(
            bytesRead: bytesRead, totalBytes: totalBytes, lines: lines, elapsedSeconds: now.timeIntervalSince(started))
        if isTerminal {
            writeError("\r" + progress.bar() + "\u{1B}[K")
            drewBar = true
        } else {
            writeError(progress.line() + "\n")
        }
    }

    /// Clears the bar so that the next message starts on a clean line.
    func finish() {
        if drewBar { writeError("\r\u{1B}[K") }
        drewBar = false
    }

    var elapsedSeconds: Double { Date().timeIntervalSince(started) }
}

func writeError(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}
