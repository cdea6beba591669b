import AccountImport
import AccountImportStorage
import Foundation
import Postgres

/// Why a run ended early: bad usage or configuration (exit 2), or a failure midway (exit 3) after which running
/// the same command again finishes the job.
enum ImportFailure: Error {
    case usage(String)
    case stopped(String)
}

/// Exit statuses (docs/import.md).
enum ExitStatus {
    static let success: Int32 = 0
    static let rejectedLines: Int32 = 1
    static let usage: Int32 = 2
    static let stopped: Int32 = 3
}

enum ImportCommand {
    static func run(arguments: [String], environment: [String: String]) -> Int32 {
        let options: ImportOptions
        do {
            guard let parsed = try ImportOptions.parse(arguments) else {
                print(ImportOptions.usage)
                return ExitStatus.success
            }
            options = parsed
        } catch {
            writeError("passkey-import: \(error)\n\(ImportOptions.usage)\n")
            return ExitStatus.usage
        }
        let run: ImportRun
        do {
            let url = try DatabaseLocation.url(
                environment: environment, executablePath: CommandLine.arguments.first ?? "").get()
            run = try ImportRun(options: options, databaseURL: url)
        } catch let failure as ImportFailure {
            return report(failure)
        } catch {
            return report(.stopped("\(error)"))
        }
        do {
            try run.importAll()
        } catch let failure as ImportFailure {
            run.finishAfterFailure()
            return report(failure)
        } catch {
            run.finishAfterFailure()
            return report(.stopped("\(error)"))
        }
        return run.finish()
    }

    private static func report(_ failure: ImportFailure) -> Int32 {
        switch failure {
        case .usage(let message):
            writeError("passkey-import: \(message)\n")
            return ExitStatus.usage
        case .stopped(let message):
            writeError("passkey-import: \(message)\n")
            return ExitStatus.stopped
        }
    }
}

/// One run over one input: lines are parsed and checked as they are read, gathered into batches of at most
/// `batchSize` lines, and each batch is written in one transaction before its rejects are recorded.
final class ImportRun {
    private let options: ImportOptions
    private let input: InputSource
    private let storage: PostgresAccountImport
    private let rejects: FileHandle
    private let progress = ProgressDisplay()
    private var splitter = LineSplitter()
    private var csv: CSVRecords?
    private var summary = ImportSummary()
    private var batchLines = 0
    private var batchFirstLine = 1
    private var candidates: [ImportCandidate] = []
    private var earlyRejects: [(Int, ImportReject)] = []
    private var writtenRejects = 0
    private var headerLines = 0
    private var blankInBatch = 0
    private let validator = RecordValidator(now: Date())

    init(options: ImportOptions, databaseURL: String) throws {
        self.options = options
        input = try InputSource(path: options.input)
        guard FileManager.default.createFile(atPath: options.rejectsPath, contents: nil, attributes: [.posixPermissions: 0o600]),
            let handle = FileHandle(forWritingAtPath: options.rejectsPath)
        else {
            throw ImportFailure.usage("cannot write the rejects file \(options.rejectsPath)")
        }
        rejects = handle
        let configuration = PostgresConfiguration(
            url: databaseURL, poolSize: 1, connectTimeoutSeconds: 10, statementTimeoutMilliseconds: 120_000,
            applicationName: "passkey-import")
        do {
            storage = try PostgresAccountImport(configuration: configuration)
        } catch let error as PostgresError where error.isConnectionFailure {
            throw ImportFailure.stopped("cannot reach the database: \(oneLine(error.message)). Nothing was imported.")
        } catch let error as PostgresAccountImport.SchemaError {
            throw ImportFailure.usage(error.description)
        }
        candidates.reserveCapacity(options.batchSize)
    }

    func importAll() throws {
        var finished = false
        while !finished {
            try input.read { chunk in
                if chunk.isEmpty {
                    finished = true
                    try splitter.finish { line throws(ImportFailure) in try take(line) }
                } else {
                    try splitter.feed(chunk) { line throws(ImportFailure) in try take(line) }
                }
            }
            progress.show(bytesRead: input.bytesRead, totalBytes: input.size, lines: summary.lines + batchLines)
        }
        try flush()
        if csv == nil, options.format == .csv {
            throw ImportFailure.usage("\(options.input) is empty: a CSV input starts with a header row")
        }
    }

    private func take(_ line: InputLine) throws(ImportFailure) {
        let parsed: ParsedLine
        switch options.format {
        case .jsonLines:
            parsed = JSONLinesRecords.parse(line)
        case .csv:
            guard let csv else {
                do {
                    csv = try CSVRecords(header: line)
                } catch {
                    throw .usage("\(options.input): \(error)")
                }
                headerLines += 1
                batchFirstLine = line.number + 1
                return
            }
            parsed = csv.parse(line)
        }
        batchLines += 1
        switch parsed {
        case .blank:
            blankInBatch += 1
        case .rejected(let reject):
            earlyRejects.append((line.number, reject))
        case .record(let raw):
            switch validator.validate(raw) {
            case .success(let record): candidates.append(ImportCandidate(line: line.number, record: record))
            case .failure(let reject): earlyRejects.append((line.number, reject))
            }
        }
        if batchLines >= options.batchSize { try flush() }
    }

    /// Writes the batch, then its rejects, then counts it.
    private func flush() throws(ImportFailure) {
        guard batchLines > 0 else { return }
        let lastLine = batchFirstLine + batchLines - 1
        var decisions: [BatchDecision] = []
        if !candidates.isEmpty {
            do {
                decisions = try storage.importBatch(candidates, now: Date()).decisions
            } catch let error as PostgresError {
                let written = batchFirstLine > 1 + headerLines ? "lines up to \(batchFirstLine - 1) are written; " : ""
                if error.isConnectionFailure {
                    throw .stopped(
                        "the database connection was lost (\(oneLine(error.message))) while writing lines \(batchFirstLine)-\(lastLine); "
                            + written + "lines from \(batchFirstLine) on are not. Run the same command again to finish.")
                }
                throw .stopped(
                    "the database refused lines \(batchFirstLine)-\(lastLine) (\(oneLine(error.description))); \(written)"
                        + "none of these lines is. Run the same command again once the cause is fixed.")
            } catch {
                throw .stopped("writing lines \(batchFirstLine)-\(lastLine) failed: \(error)")
            }
        }
        var allRejects = earlyRejects
        for (candidate, decision) in zip(candidates, decisions) {
            switch decision {
            case .insert: summary.imported += 1
            case .unchanged: summary.unchanged += 1
            case .rejected(let reject): allRejects.append((candidate.line, reject))
            }
        }
        allRejects.sort { $0.0 < $1.0 }
        var text = ""
        for (line, reject) in allRejects {
            summary.add(reject)
            text += rejectsFileLine(line: line, reject)
        }
        if !text.isEmpty {
            do {
                try rejects.write(contentsOf: Data(text.utf8))
            } catch {
                throw .stopped("cannot write the rejects file \(options.rejectsPath): \(error)")
            }
        }
        writtenRejects += allRejects.count
        summary.blank += blankInBatch
        blankInBatch = 0
        candidates.removeAll(keepingCapacity: true)
        earlyRejects.removeAll(keepingCapacity: true)
        batchFirstLine = lastLine + 1
        batchLines = 0
    }

    /// Prints the summary of a complete run and returns its exit status.
    func finish() -> Int32 {
        progress.show(bytesRead: input.bytesRead, totalBytes: input.size, lines: summary.lines, final: true)
        progress.finish()
        try? rejects.close()
        var text = summary.report(complete: true)
        if summary.rejected > 0 {
            text += "rejected lines and reasons are in \(options.rejectsPath)\n"
        } else {
            try? FileManager.default.removeItem(atPath: options.rejectsPath)
        }
        text += String(format: "took %.1f s\n", progress.elapsedSeconds)
        print(text, terminator: "")
        return summary.rejected > 0 ? ExitStatus.rejectedLines : ExitStatus.success
    }

    /// Reports what a run that stopped early did write.
    func finishAfterFailure() {
        progress.finish()
        try? rejects.close()
        writeError(summary.report(complete: false))
    }
}

/// libpq's reasons span lines; a message is one.
func oneLine(_ text: String) -> String {
    text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
}
