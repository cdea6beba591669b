import Foundation
import XCTest

/// `docs/configuration.md` against the code: the variables the executables read must be exactly the ones its first
/// table lists, each with the executables that read it. They are found two ways: by scanning the production sources
/// for every way to read one (a method of `EnvironmentReader` called with a name, a subscript of the process
/// environment, `getenv`), and by recording what each process's configuration type reads (`Processes`), which
/// says who reads the shared variables of `Shared/Foundations/Configuration`. A string default in the code must be
/// the one the table gives.
final class ConfigurationDocumentTests: XCTestCase {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func testTheDocumentListsExactlyTheVariablesTheExecutablesRead() throws {
        let sources = try SourceTree(root: Self.packageRoot)
        let reads = try EnvironmentReads(sources: sources, recorded: Processes.variablesRead())
        let document = try ConfigurationDocument(
            text: String(contentsOf: Self.packageRoot.appendingPathComponent("docs/configuration.md"), encoding: .utf8),
            services: Set(Processes.configurations.keys))

        XCTAssertEqual(reads.unattributed, [], "reads the test cannot attribute to an executable")
        XCTAssertEqual(reads.dynamic, [], "environment reads whose name is not a literal")
        let read = Set(reads.readers.keys)
        let listed = Set(document.readers.keys)
        XCTAssertEqual(read.subtracting(listed).sorted(), [], "read by the code but not in docs/configuration.md")
        XCTAssertEqual(listed.subtracting(read).sorted(), [], "in docs/configuration.md but read by nothing")
        for (variable, executables) in reads.readers {
            guard let documented = document.readers[variable] else { continue }
            XCTAssertEqual(documented, executables, "\(variable): read by")
        }
        for (variable, value) in reads.stringDefaults {
            let cell = document.defaults[variable] ?? ""
            XCTAssertTrue(
                cell.contains("`\(value)`"), "\(variable): the code's default is \(value), the table's \(cell)")
        }
        // The scan found the reads there are: every process's configuration, and the tools' own.
        XCTAssertGreaterThanOrEqual(read.count, 26)
        XCTAssertEqual(
            reads.readers["DATABASE_URL"],
            [
                "challenge-service", "verification-service", "session-service", "passkey-migrate", "passkey-import",
                "passkey-admin",
            ])
        XCTAssertEqual(reads.readers["PASSKEY_DATA_DIR"], ["passkey-import"])
        XCTAssertEqual(reads.readers["PASSKEY_WEBHOOK_TIMEOUT"], ["session-service"])
        XCTAssertEqual(
            reads.readers["PASSKEY_RP_ID"], ["gateway", "challenge-service", "verification-service", "session-service"])
    }

    /// The scanner on made-up sources: each way of reading a variable is found, and a read it cannot name fails.
    func testTheScannerFindsEveryKindOfRead() throws {
        let sources = SourceTree(
            executables: ["tool": "Services/Tool", "daemon": "Services/Daemon"],
            files: [
                "Shared/Foundations/Configuration/EnvironmentReader.swift": """
                public struct EnvironmentReader {
                    public func raw(_ name: String) -> String? { environment[name] }
                    public func string(_ name: String, default defaultValue: String) -> String { "" }
                }
                """,
                "Shared/Foundations/Configuration/Extra.swift": """
                extension EnvironmentReader {
                    public func flag(
                        _ name: String) -> Bool { false }
                }
                struct SharedPart {
                    init(_ env: EnvironmentReader) {
                        a = env.string("A_NAME", default: "five")
                        b = env.flag(
                            "B_NAME")
                        c = try env.raw("C_NAME").map { _ in 1 }
                        x = try env.raw("X_NAME")
                    }
                }
                """,
                "Services/Tool/main.swift": """
                let configuration = try ToolConfiguration(environment: ProcessInfo.processInfo.environment)
                let d = ProcessInfo.processInfo.environment["D_NAME"]
                """,
                "Services/Daemon/main.swift": """
                let e = getenv("E_NAME")
                let f = ProcessInfo.processInfo.environment[name]
                """,
            ])
        // The shared part's reads go to the processes recorded reading them; X_NAME, which none was, is unattributed.
        let reads = try EnvironmentReads(
            sources: sources,
            recorded: ["tool": ["A_NAME", "B_NAME", "C_NAME", "F_NAME"], "daemon": ["B_NAME"]])
        XCTAssertEqual(
            reads.readers,
            [
                "A_NAME": ["tool"], "B_NAME": ["tool", "daemon"], "C_NAME": ["tool"], "D_NAME": ["tool"],
                "E_NAME": ["daemon"], "F_NAME": ["tool"], "X_NAME": [],
            ])
        XCTAssertEqual(reads.unattributed, ["Shared/Foundations/Configuration/Extra.swift: X_NAME"])
        XCTAssertEqual(reads.stringDefaults, ["A_NAME": "five"])
        XCTAssertEqual(reads.dynamic, ["Services/Daemon/main.swift: processInfo.environment[name]"])
    }

    func testTheTableParser() throws {
        let document = try ConfigurationDocument(
            text: """
                # Configuration
                ## Variables of the executables
                | variable | read by | default | format | meaning |
                |---|---|---|---|---|
                | `A_NAME` | services | `five` | text | A. |
                | `B_NAME` | daemon, tool | unset | text | B, with `C_NAME` mentioned. |
                ## Variables of the scripts
                | `Z_NAME` | a script | unset | Z. |
                """, services: ["gateway", "daemon"])
        XCTAssertEqual(document.readers, ["A_NAME": ["gateway", "daemon"], "B_NAME": ["daemon", "tool"]])
        XCTAssertEqual(document.defaults["A_NAME"], "`five`")
        XCTAssertThrowsError(try ConfigurationDocument(text: "# nothing", services: []))
    }
}

/// The production sources (`Shared/`, `Services/`, `Clients/`) and the executables of `Package.swift` under
/// `Services/`, with their directories.
struct SourceTree {
    var executables: [String: String]
    var files: [String: String]

    init(executables: [String: String], files: [String: String]) {
        self.executables = executables
        self.files = files
    }

    init(root: URL) throws {
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let target = try Regex(#"\.executableTarget\(\s*name:\s*"([^"]+)".*?path:\s*"([^"]+)""#).dotMatchesNewlines()
        executables = [:]
        for match in manifest.matches(of: target) {
            let path = String(match.output[2].substring ?? "")
            if path.hasPrefix("Services/") { executables[String(match.output[1].substring ?? "")] = path }
        }
        files = [:]
        for directory in ["Shared", "Services", "Clients"] {
            let base = root.appendingPathComponent(directory)
            guard let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else {
                continue
            }
            for case let url as URL in walker where url.pathExtension == "swift" {
                let relative = String(url.path.dropFirst(root.path.count + 1))
                files[relative] = try String(contentsOf: url, encoding: .utf8)
            }
        }
    }

    /// The executables whose directory holds `path`.
    func executables(containing path: String) -> Set<String> {
        let directory = path.split(separator: "/").prefix(2).joined(separator: "/") + "/"
        return Set(executables.filter { ($0.value + "/").hasPrefix(directory) }.map(\.key))
    }
}

/// Which variables the executables read, and how.
struct EnvironmentReads {
    /// Each variable and the executables that read it.
    var readers: [String: Set<String>] = [:]
    /// The string-literal default of a variable's read, where the code gives one.
    var stringDefaults: [String: String] = [:]
    /// Reads found outside any place the scan can attribute.
    var unattributed: [String] = []
    /// Reads of the environment by a name that is not a literal.
    var dynamic: [String] = []

    /// `recorded`: the variables each process's configuration was seen reading, which attributes the reads of
    /// `Shared/Foundations/Configuration` (and names the variables read through a value, not a literal there).
    init(sources: SourceTree, recorded: [String: Set<String>]) throws {
        // The reading methods are EnvironmentReader's: every `func name(_ name: String` in its declarations.
        var methods: Set<String> = []
        let method = try Regex(#"func\s+(\w+)\(\s*_\s+name:\s*String"#)
        for (path, text) in sources.files where path.hasPrefix("Shared/Foundations/Configuration/") {
            for match in text.matches(of: method) { methods.insert(String(match.output[1].substring ?? "")) }
        }
        let name = #""([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)""#
        let call = try Regex(#"\.(\w+)\(\s*"# + name + #"(?:\s*,\s*default:\s*"([^"]*)")?"#)
        let subscriptRead = try Regex(#"environment\[\s*"# + name + #"\s*\]"#)
        let getenvRead = try Regex(#"getenv\(\s*"# + name + #"\s*\)"#)
        let dynamicRead = try Regex(#"(?:processInfo\.environment\[|getenv\()\s*[^"\s\]\)][^\]\)]*[\]\)]"#)

        for (process, variables) in recorded {
            for variable in variables { readers[variable, default: []].insert(process) }
        }
        for (path, text) in sources.files.sorted(by: { $0.key < $1.key }) {
            var found: [(String, String?)] = []
            for match in text.matches(of: call) where methods.contains(String(match.output[1].substring ?? "")) {
                found.append((String(match.output[2].substring ?? ""), match.output[3].substring.map(String.init)))
            }
            for match in text.matches(of: subscriptRead) {
                found.append((String(match.output[1].substring ?? ""), nil))
            }
            for match in text.matches(of: getenvRead) { found.append((String(match.output[1].substring ?? ""), nil)) }
            for match in text.matches(of: dynamicRead) { dynamic.append("\(path): \(text[match.range])") }
            guard !found.isEmpty else { continue }
            let shared = path.hasPrefix("Shared/Foundations/Configuration/")
            for (variable, defaultValue) in found {
                let executables =
                    shared
                    ? Set(recorded.filter { $0.value.contains(variable) }.keys)
                    : path.hasPrefix("Services/") ? sources.executables(containing: path) : []
                if executables.isEmpty { unattributed.append("\(path): \(variable)") }
                readers[variable, default: []].formUnion(executables)
                if let defaultValue, !defaultValue.isEmpty { stringDefaults[variable] = defaultValue }
            }
        }
    }
}

/// The first table of `docs/configuration.md` ("Variables of the executables"): one variable a row, the
/// executables that read it (`services` standing for every process with a configuration type), and its default.
struct ConfigurationDocument {
    struct Missing: Error {}

    var readers: [String: Set<String>] = [:]
    var defaults: [String: String] = [:]

    init(text: String, services: Set<String>) throws {
        guard let start = text.range(of: "\n## Variables of the executables") else { throw Missing() }
        let section = text[start.upperBound...].components(separatedBy: "\n## ").first ?? ""
        let variable = try Regex(#"^`([A-Z][A-Z0-9_]+)`$"#)
        for line in section.split(separator: "\n") where line.hasPrefix("|") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count > 4, let match = cells[1].wholeMatch(of: variable) else { continue }
            let name = String(match.output[1].substring ?? "")
            var executables: Set<String> = []
            for reader in cells[2].split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                if reader == "services" { executables.formUnion(services) } else { executables.insert(reader) }
            }
            readers[name] = executables
            defaults[name] = cells[3]
        }
    }
}
