import Foundation

/// A deployment's `KEY=VALUE` file, the form `deploy/kubernetes/base/passkey.env`, `podman --env-file` and Docker
/// read: one assignment a line, blank lines and `#` comments skipped, values taken as written (no quotes removed,
/// nothing expanded). Bounded: 1 MiB, 10,000 lines, names of `A-Z`, `0-9` and `_`.
enum EnvironmentFile {
    static let byteLimit = 1024 * 1024
    static let lineLimit = 10_000

    struct Invalid: Error {
        let reason: String
    }

    /// The assignments of `text`; a later assignment of a name replaces an earlier one, as the readers do.
    static func parse(_ text: String) throws(Invalid) -> [String: String] {
        guard text.utf8.count <= byteLimit else { throw Invalid(reason: "is larger than 1 MiB") }
        // "\r\n" is one Character, so both line ends split here.
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        guard lines.count <= lineLimit else { throw Invalid(reason: "has more than \(lineLimit) lines") }
        var values: [String: String] = [:]
        for (number, line) in lines.enumerated() {
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let equals = trimmed.firstIndex(of: "=") else {
                throw Invalid(reason: "line \(number + 1) is not NAME=VALUE")
            }
            let name = trimmed[..<equals]
            guard !name.isEmpty, name.utf8.count <= 128,
                name.utf8.allSatisfy({ (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F })
            else { throw Invalid(reason: "line \(number + 1): the name must be A-Z, 0-9 and _") }
            values[String(name)] = String(trimmed[trimmed.index(after: equals)...])
        }
        return values
    }

    /// The file at `path`, read whole up to the limit.
    static func read(path: String) throws(Invalid) -> [String: String] {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw Invalid(reason: "cannot be read") }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: byteLimit + 1) ?? Data() else {
            throw Invalid(reason: "cannot be read")
        }
        guard data.count <= byteLimit else { throw Invalid(reason: "is larger than 1 MiB") }
        guard let text = String(data: data, encoding: .utf8) else { throw Invalid(reason: "is not UTF-8 text") }
        return try parse(text)
    }
}
