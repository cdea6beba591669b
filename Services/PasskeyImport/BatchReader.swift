import AccountImport
import Foundation

/// Reads the input on a thread of its own: each line cut, parsed and checked on its own (`RecordValidator`), and
/// gathered into batches of `batchSize` lines for the writer.
///
/// `@unchecked Sendable`: made on the main thread and handed to the reading thread before its first use; from then
/// on only that thread touches it.
final class BatchReader: @unchecked Sendable {
    private let options: ImportOptions
    private let input: InputSource
    private let validator: RecordValidator
    private var splitter = LineSplitter()
    private var csv: CSVRecords?
    private var batch = LineBatch(firstLine: 1)

    init(options: ImportOptions, input: InputSource, now: Date) {
        self.options = options
        self.input = input
        self.validator = RecordValidator(now: now)
        batch.candidates.reserveCapacity(options.batchSize)
    }

    /// Reads to the end, or until the writer closes `queue`.
    func run(into queue: BatchQueue) {
        do {
            var finished = false
            while !finished {
                try input.read { chunk in
                    if chunk.isEmpty {
                        finished = true
                        try splitter.finish { line throws(ImportFailure) in try take(line, queue) }
                    } else {
                        try splitter.feed(chunk) { line throws(ImportFailure) in try take(line, queue) }
                    }
                }
            }
            try hand(queue)
            if csv == nil, options.format == .csv {
                throw ImportFailure.usage("\(options.input) is empty: a CSV input starts with a header row")
            }
            _ = queue.put(.end)
        } catch let failure as ImportFailure {
            _ = queue.put(.failed(failure))
        } catch {
            _ = queue.put(.failed(.stopped("\(error)")))
        }
    }

    private func take(_ line: InputLine, _ queue: BatchQueue) throws(ImportFailure) {
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
                batch.firstLine = line.number + 1
                return
            }
            parsed = csv.parse(line)
        }
        batch.lineCount += 1
        switch parsed {
        case .blank:
            batch.blank += 1
        case .rejected(let reject):
            batch.rejects.append((line.number, reject))
        case .record(let raw):
            switch validator.validate(raw) {
            case .success(let record): batch.candidates.append(ImportCandidate(line: line.number, record: record))
            case .failure(let reject): batch.rejects.append((line.number, reject))
            }
        }
        if batch.lineCount >= options.batchSize { try hand(queue) }
    }

    private func hand(_ queue: BatchQueue) throws(ImportFailure) {
        guard batch.lineCount > 0 else { return }
        batch.bytesRead = input.bytesRead
        let next = LineBatch(firstLine: batch.lastLine + 1)
        guard queue.put(.batch(batch)) else { throw .stopped("the writer stopped") }
        batch = next
        batch.candidates.reserveCapacity(options.batchSize)
    }
}
