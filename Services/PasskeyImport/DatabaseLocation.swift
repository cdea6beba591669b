import Foundation

/// Where the database is: `DATABASE_URL`, or the local Postgres that `deploy/local/run` keeps in `.local/postgres`
/// (`PASSKEY_DATA_DIR` when set), reached through its unix socket.
enum DatabaseLocation {
    /// The connection string and where it came from (for messages), or the message explaining why there is none.
    static func url(environment: [String: String], executablePath: String) -> Result<
        (String, source: String), ImportFailure
    > {
        if let url = environment["DATABASE_URL"], !url.isEmpty { return .success((url, "DATABASE_URL")) }
        var candidates: [String] = []
        if let dataDirectory = environment["PASSKEY_DATA_DIR"], !dataDirectory.isEmpty {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: dataDirectory, isDirectory: &isDirectory),
                isDirectory.boolValue
            else {
                return .failure(.usage("PASSKEY_DATA_DIR: \(dataDirectory) is not a directory"))
            }
            candidates = [dataDirectory]
        } else {
            // The repository the tool runs in or was built in: the working directory or the executable's, and
            // their parents.
            for start in [
                FileManager.default.currentDirectoryPath, (executablePath as NSString).deletingLastPathComponent,
            ] {
                var directory = URL(fileURLWithPath: start).standardizedFileURL
                while true {
                    candidates.append(directory.appendingPathComponent(".local/postgres").path)
                    let parent = directory.deletingLastPathComponent()
                    if parent.path == directory.path { break }
                    directory = parent
                }
            }
        }
        for directory in candidates where FileManager.default.fileExists(atPath: directory + "/.s.PGSQL.5432") {
            return .success(
                ("postgresql:///postgres?host=\(directory)&user=postgres", "the local database of deploy/local/run"))
        }
        return .failure(
            .usage(
                "DATABASE_URL is not set and the local database of deploy/local/run is not running (no server socket in "
                    + (candidates.first ?? ".local/postgres")
                    + (candidates.count > 1 ? " or its parents' .local/postgres" : "")
                    + ")"))
    }
}
