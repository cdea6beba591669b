import Foundation
import Observability

/// What a build of the product is: its version (semver, the one in the repository's `VERSION` file) and the commit
/// it was built from, as `--version` prints it and `passkey_build_info` exposes it.
///
/// The version is compiled in. The commit cannot be, without a build plugin, so the build stamps it beside the
/// executables: a file named `BUILD_COMMIT` in the executable's directory holding the commit's hex name, with
/// `-dirty` after it when the work tree had uncommitted changes (`deploy/images/build` writes it into every image,
/// `deploy/local/run` after its build). A build without one, or with anything else in it, says `unknown`.
public struct BuildInfo: Sendable, Equatable {
    /// The product's version. `Tests/BuildInfoTests` holds it equal to the `VERSION` file.
    public static let productVersion = "0.2.0"

    /// The name of the file beside the executables that names the commit they were built from.
    public static let commitFileName = "BUILD_COMMIT"

    /// What a build says when nothing names its commit.
    public static let unknownCommit = "unknown"

    /// The product's version.
    public let version: String
    /// The commit the executables were built from, or `unknown`.
    public let commit: String

    /// A build's information as given.
    public init(version: String = BuildInfo.productVersion, commit: String) {
        self.version = version
        self.commit = commit
    }

    /// This process's build: the compiled-in version and the commit named beside its executable.
    public static let current = BuildInfo(
        commit: commit(
            stamp: Bundle.main.executableURL.flatMap { executable in
                try? String(
                    contentsOf: executable.deletingLastPathComponent().appendingPathComponent(commitFileName),
                    encoding: .utf8)
            }))

    /// The commit a stamp file's text names: its first line when that is 7 to 40 lowercase hex digits, optionally
    /// followed by `-dirty`; otherwise (no file, an empty or unreadable one) `unknown`. Only such names reach the
    /// output and the metric's label.
    public static func commit(stamp: String?) -> String {
        guard let line = stamp?.split(separator: "\n", omittingEmptySubsequences: false).first else {
            return unknownCommit
        }
        let text = line.trimmingCharacters(in: .whitespaces)
        let hex = text.hasSuffix("-dirty") ? text.dropLast("-dirty".count) : Substring(text)
        let isHex = hex.utf8.allSatisfy {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
        }
        guard (7...40).contains(hex.utf8.count), isHex else { return unknownCommit }
        return text
    }

    /// Whether a command line asks for the version: `--version` as its first argument.
    public static func asksForVersion(_ arguments: [String]) -> Bool {
        arguments.dropFirst().first == "--version"
    }

    /// The line `--version` prints: `<program> <version> (commit <commit>)`.
    public func versionLine(program: String) -> String {
        "\(program) \(version) (commit \(commit))"
    }

    /// Sets the `passkey_build_info{version,commit}` gauge to 1, the usual shape of a build-information metric.
    public func record(in metrics: MetricsRegistry) {
        metrics.set(
            "passkey_build_info", help: "The version and commit this process was built from; always 1.",
            labels: ["version": version, "commit": commit], to: 1)
    }

    /// Prints the version line and ends the process with status 0 when the command line asks for the version;
    /// otherwise returns. Called first in every executable's `main`, before any configuration is read, so it needs
    /// no environment, database or network.
    public static func answerVersionRequest(program: String, arguments: [String] = CommandLine.arguments) {
        guard asksForVersion(arguments) else { return }
        print(current.versionLine(program: program))
        exit(0)
    }
}
