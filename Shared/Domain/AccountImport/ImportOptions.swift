/// The command line of `passkey-import`.
public struct ImportOptions: Sendable, Hashable {
    /// The input path, or `-` for standard input.
    public var input: String
    public var format: ImportFormat
    /// Where the rejects go: `--rejects`, or the input's path with `.rejects` appended (`stdin.rejects` in the
    /// working directory for standard input).
    public var rejectsPath: String
    public var batchSize: Int

    public init(input: String, format: ImportFormat, rejectsPath: String, batchSize: Int) {
        self.input = input
        self.format = format
        self.rejectsPath = rejectsPath
        self.batchSize = batchSize
    }

    public static let usage = """
        usage: passkey-import [--format jsonl|csv] [--rejects PATH] [--batch-size N] FILE
          FILE            JSON Lines (.jsonl, .ndjson) or CSV with a header row (.csv); - reads standard input
          --format        the input's format, required for standard input or another extension
          --rejects PATH  where the rejected lines' numbers and reasons go (default: FILE.rejects)
          --batch-size N  records per transaction, 1 to 10000 (default 5000)
        DATABASE_URL names the database; unset, deploy/local/run's local database is used.
        Exit status: 0 every line imported or unchanged, 1 some lines rejected, 2 bad usage or configuration,
        3 stopped early (database or input failure): run the same command again to finish.
        """

    /// A bad command line, with the message to print above the usage.
    public struct UsageError: Error, Sendable, Hashable, CustomStringConvertible {
        public let description: String
    }

    /// Parses the arguments after the program name; `help` is true for `--help` alone.
    public static func parse(_ arguments: [String]) throws(UsageError) -> ImportOptions? {
        var format: ImportFormat?
        var rejects: String?
        var batchSize = ImportLimits.defaultBatchSize
        var input: String?
        var index = 0
        func value(_ option: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count else { throw UsageError(description: "\(option) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--help", "-h":
                return nil
            case "--format":
                let name = try value(argument)
                guard let parsed = ImportFormat(rawValue: name) else {
                    throw UsageError(description: "--format must be jsonl or csv")
                }
                format = parsed
            case "--rejects":
                let path = try value(argument)
                guard !path.isEmpty else { throw UsageError(description: "--rejects needs a path") }
                rejects = path
            case "--batch-size":
                let text = try value(argument)
                guard let size = Int(text), ImportLimits.batchSizes.contains(size) else {
                    throw UsageError(description: "--batch-size must be a number from 1 to 10000")
                }
                batchSize = size
            default:
                guard argument == "-" || !argument.hasPrefix("-") else {
                    throw UsageError(description: "unknown option \(argument)")
                }
                guard input == nil else { throw UsageError(description: "give one input file") }
                input = argument
            }
            index += 1
        }
        guard let input else { throw UsageError(description: "no input file (- reads standard input)") }
        guard let resolvedFormat = format ?? (input == "-" ? nil : ImportFormat(fileName: input)) else {
            throw UsageError(
                description: input == "-"
                    ? "--format is required for standard input"
                    : "cannot tell the format from the file name; give --format jsonl or --format csv")
        }
        return ImportOptions(
            input: input, format: resolvedFormat,
            rejectsPath: rejects ?? (input == "-" ? "stdin.rejects" : input + ".rejects"),
            batchSize: batchSize)
    }
}
