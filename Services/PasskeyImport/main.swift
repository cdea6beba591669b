import BuildInfo
import Foundation

// Imports accounts from a JSON Lines or CSV file (docs/import.md): parse, check, write in batches, report.
// `--version` prints the build and exits.

BuildInfo.answerVersionRequest(program: "passkey-import")

// Ctrl-C or SIGTERM: the batch being written is rolled back by the server, the committed ones stay.
for interruption in [SIGINT, SIGTERM] {
    signal(interruption) { _ in
        // A static string and write(2): nothing here allocates or takes a lock.
        let message: StaticString =
            "\npasskey-import: interrupted; the batches written so far stay. Run the same command again to finish.\n"
        message.withUTF8Buffer { _ = write(2, $0.baseAddress, $0.count) }
        _exit(3)
    }
}
exit(
    ImportCommand.run(
        arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
