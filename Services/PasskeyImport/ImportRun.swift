import AccountImport
import AccountImportStorage
import Foundation
import Postgres

/// The writing side of a run: each batch from the reader is decided and written in one transaction, then its
/// rejects go to the rejects file and its counts to the summary.
final class ImportRun {
    private let options: ImportOptions
    private let inputSize: Int64?
    private let storage: PostgresAccountImport
    private let rejects: FileHandle
    private let progress = ProgressDisplay()
    private var summary = ImportSummary()
    private var lastWrittenLine = 0
    private var bytesRead: Int64 = 0

    /// `databaseSource` says where the URL came from (`DATABASE_URL`, or the local database), for messages.
    init(options: ImportOptions, databaseURL: String, databaseSource: String, inputSize: Int64?) throws {
        self.options = options
        self.inputSize = inputSize
        guard
            FileManager.default.createFile(
                atPath: options.rejectsPath, contents: nil, attributes: [.posixPermissions: 0o600]),
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
            throw ImportFailure.stopped(
                "cannot reach the database (\(databaseSource)): \(oneLine(error.message)). Nothing was imported.")
        } catch let error as PostgresAccountImport.SchemaError {
            throw ImportFailure.usage(error.description)
        }
    }

    /// Writes every batch until the input ends; throws the reader's or the writer's failure.
    func importAll(from queue: BatchQueue) throws(ImportFailure) {
        while true {
            switch queue.take() {
            case .batch(let batch):
                try write(batch)
                bytesRead = batch.bytesRead
                progress.show(bytesRead: bytesRead, totalBytes: inputSize, lines: summary.lines)
            case .end:
                return
            case .failed(let failure):
                throw failure
            }
        }
    }

    private func write(_ batch: LineBatch) throws(ImportFailure) {
        var decisions: [BatchDecision] = []
        if !batch.candidates.isEmpty {
            let range = "lines \(batch.firstLine)-\(batch.lastLine)"
            let written = lastWrittenLine > 0 ? "lines up to \(lastWrittenLine) are written" : "no line is written"
            do {
                decisions = try storage.importBatch(batch.candidates, now: Date()).decisions
            } catch let error as PostgresError {
                if error.isConnectionFailure {
                    throw .stopped(
                        "the database connection was lost (\(oneLine(error.message))) while writing \(range); "
                            + "\(written); lines from \(batch.firstLine) on are not. "
                            + "Run the same command again to finish.")
                }
                throw .stopped(
                    "the database refused \(range) (\(oneLine(error.description))); \(written); none of these lines "
                        + "is. Run the same command again once the cause is fixed.")
            } catch {
                throw .stopped("writing \(range) failed: \(error)")
            }
        }
        var allRejects = batch.rejects
        for (candidate, decision) in zip(batch.candidates, decisions) {
            switch decision {
            case .insert: summary.imported += 1
            case .unchanged: summary.unchanged += 1
            case .rejected(let reject): allRejects.append((candidate.line, reject))
            }
        }
        allRejects.sort { $0.line < $1.line }
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
        summary.blank += batch.blank
        lastWrittenLine = batch.lastLine
    }

    /// Prints the summary of a complete run and returns its exit status.
    func finish() -> Int32 {
        progress.show(bytesRead: bytesRead, totalBytes: inputSize, lines: summary.lines, final: true)
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

    /// Reports what a run that stopped early did write; a rejects file with nothing in it is removed.
    func finishAfterFailure() {
        progress.finish()
        try? rejects.close()
        if summary.rejected == 0 { try? FileManager.default.removeItem(atPath: options.rejectsPath) }
        if summary.lines > 0 { writeError(summary.report(complete: false)) }
    }
}
