import Crypto
import Foundation
import Observability
import Synchronization
import WebAuthn

/// The FIDO metadata BLOB in force (`PASSKEY_MDS_BLOB`, verified against `PASSKEY_MDS_ROOT`): loaded at start,
/// where any failure stops the service, and reloaded every interval, where a failure is logged and the last good
/// BLOB stays in force. A reloaded BLOB must also not be older (a smaller `no`) than the one in force.
public final class MetadataSource: Sendable {
    /// Why the files cannot be used: the variable that names the bad file, and the reason.
    public struct LoadError: Error, Sendable, CustomStringConvertible {
        public let variable: String
        public let reason: String
        public var description: String { "\(variable): \(reason)" }
    }

    /// The root file's limit: a few PEM certificates.
    static let maximumRootSize = 256 << 10

    let blobPath: String
    let rootPath: String
    let clock: @Sendable () -> Date
    let logger: Logger
    private let current = Mutex<MetadataBLOB?>(nil)

    public init(blobPath: String, rootPath: String, clock: @escaping @Sendable () -> Date = Date.init, logger: Logger) {
        self.blobPath = blobPath
        self.rootPath = rootPath
        self.clock = clock
        self.logger = logger
    }

    /// The models the BLOB in force refuses (empty before the first load).
    public var refusedAAGUIDs: [AAGUID: String] { current.withLock { $0?.refusedAAGUIDs ?? [:] } }

    /// The attestation roots of each model the BLOB in force describes (empty before the first load).
    public var attestationRoots: [AAGUID: [Certificate]] { current.withLock { $0?.attestationRoots ?? [:] } }

    /// The BLOB in force.
    public var blob: MetadataBLOB? { current.withLock { $0 } }

    /// Reads and verifies both files and puts the BLOB in force. Throws `LoadError` naming the variable.
    @discardableResult
    public func load() throws(LoadError) -> MetadataBLOB {
        let blob = try read()
        current.withLock { $0 = blob }
        logger.info(
            "mds.loaded",
            [
                "no": String(blob.number), "next_update": blob.nextUpdate, "entries": String(blob.entries.count),
                "refused_models": String(blob.refusedAAGUIDs.count),
            ])
        return blob
    }

    /// Loads again; on failure (or a BLOB older than the one in force) logs the reason and keeps the last good one.
    /// Returns whether a BLOB with a new `no` is in force.
    @discardableResult
    public func reload() -> Bool {
        let fresh: MetadataBLOB
        do {
            fresh = try read()
        } catch {
            logger.error("mds.reload_failed", ["variable": error.variable, "reason": error.reason, "kept": kept()])
            return false
        }
        if let number = blob?.number, fresh.number < number {
            logger.error(
                "mds.reload_failed",
                [
                    "variable": "PASSKEY_MDS_BLOB", "reason": "no \(fresh.number) is older than \(number)",
                    "kept": kept(),
                ])
            return false
        }
        let previous = current.withLock { current in
            defer { current = fresh }
            return current?.number
        }
        // The same BLOB read again (the usual case between two publications) is not worth a line.
        guard previous != fresh.number else { return false }
        logger.info(
            "mds.reloaded",
            [
                "no": String(fresh.number), "next_update": fresh.nextUpdate,
                "refused_models": String(fresh.refusedAAGUIDs.count),
            ])
        return true
    }

    /// Reloads every `interval` seconds until cancelled.
    public func run(interval: Double) async {
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: .milliseconds(Int64(interval * 1000)))
            } catch {
                return
            }
            reload()
        }
    }

    private func kept() -> String { blob.map { "no \($0.number)" } ?? "none" }

    private func read() throws(LoadError) -> MetadataBLOB {
        let rootBytes = try Self.file(rootPath, limit: Self.maximumRootSize, variable: "PASSKEY_MDS_ROOT")
        let roots: [Certificate]
        do {
            roots = try MetadataBLOB.certificates(pem: String(decoding: rootBytes, as: UTF8.self))
        } catch {
            throw LoadError(variable: "PASSKEY_MDS_ROOT", reason: error.reason)
        }
        let blobBytes = try Self.file(blobPath, limit: MetadataBLOB.maximumSize, variable: "PASSKEY_MDS_BLOB")
        do {
            return try MetadataBLOB(jws: blobBytes, roots: roots, now: clock())
        } catch {
            throw LoadError(variable: "PASSKEY_MDS_BLOB", reason: error.reason)
        }
    }

    /// A regular file's bytes, refused above `limit` before it is read.
    static func file(_ path: String, limit: Int, variable: String) throws(LoadError) -> [UInt8] {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            throw LoadError(variable: variable, reason: "cannot read \(path)")
        }
        guard attributes[.type] as? FileAttributeType == .typeRegular else {
            throw LoadError(variable: variable, reason: "\(path) is not a regular file")
        }
        let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
        guard size <= limit else {
            throw LoadError(variable: variable, reason: "\(path) is \(size) bytes, more than \(limit)")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw LoadError(variable: variable, reason: "cannot read \(path)")
        }
        defer { try? handle.close() }
        // Read at most one byte past the limit, in case the file grew since it was measured.
        let data = (try? handle.read(upToCount: limit + 1)) ?? nil
        let bytes = [UInt8](data ?? Data())
        guard bytes.count <= limit else {
            throw LoadError(variable: variable, reason: "\(path) is more than \(limit) bytes")
        }
        return bytes
    }
}
