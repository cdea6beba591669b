import Foundation

// Imports accounts from a JSON Lines or CSV file (docs/import.md): parse, check, write in batches, report.
exit(ImportCommand.run(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
