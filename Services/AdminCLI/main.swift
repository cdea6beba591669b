// passkey-admin: the operator's command line. The token commands work against DATABASE_URL directly, so the first
// admin token can be made before the admin API has any; the other commands call the admin API
// (PASSKEY_ADMIN_URL, PASSKEY_ADMIN_TOKEN). Exit statuses in Usage.swift and docs/admin.md.

import BuildInfo

BuildInfo.answerVersionRequest(program: "passkey-admin")

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "token"?:
    await TokenCommands.run(arguments.dropFirst())
case "doctor"?:
    DoctorCommand.run(arguments.dropFirst())
case let word? where AdminAPICommands.words.contains(word):
    AdminAPICommands.run(arguments)
case "help"?, "--help"?, "-h"?:
    print(usage)
default:
    finish(.usage, usage)
}
