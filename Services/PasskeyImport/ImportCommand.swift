import AccountImport
import AccountImportStorage
import Foundation
import Postgres

/// Why a run ended early: bad usage or configuration (exit 2), or a failure midway (exit 3) after which running
/// the same command again finishes the job.
enum ImportFailure: Error, Sendable {
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
        let reader: BatchReader
        do {
            let (url, source) = try DatabaseLocation.url(
                environment: environment, executablePath: CommandLine.arguments.first ?? ""
            ).get()
            let input = try InputSource(path: options.input)
            guard !input.isSameFile(as: options.rejectsPath) else {
                throw ImportFailure.usage("the rejects file \(options.rejectsPath) is the input itself")
            }
            run = try ImportRun(options: options, databaseURL: url, databaseSource: source, inputSize: input.size)
            reader = BatchReader(options: options, input: input, now: Date())
        } catch let failure as ImportFailure {
            return report(failure)
        } catch {
            return report(.stopped("\(error)"))
        }
        // Reading and checking the next batch overlaps writing this one; at most two batches wait in between.
        let queue = BatchQueue(capacity: 2)
        let thread = Thread { reader.run(into: queue) }
        thread.name = "passkey-import reader"
        thread.start()
        do {
            try run.importAll(from: queue)
        } catch {
            queue.close()
            run.finishAfterFailure()
            return report(error)
        }
        return run.finish()
    }

    static func report(_ failure: ImportFailure) -> Int32 {
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

/// libpq's reasons span lines; a message is one.
func oneLine(_ text: String) -> String {
    text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
}
