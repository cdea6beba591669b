import Crypto
import Foundation
import Synchronization

/// The files of one process's mutual-TLS identity: its certificate chain, its private key and the CA bundle its
/// peers must chain to (all PEM).
public struct MutualTLSFiles: Sendable, Equatable {
    public var certificateChainPath: String
    public var privateKeyPath: String
    public var trustedCAPath: String

    public init(certificateChainPath: String, privateKeyPath: String, trustedCAPath: String) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
        self.trustedCAPath = trustedCAPath
    }
}

/// A process's mutual-TLS 1.3 contexts (the server side and the client side), made from ``MutualTLSFiles`` and
/// made again when the files' contents change, as cert-manager rotates a Secret. New connections use the newest
/// contexts; connections already open keep theirs until they close, so nothing in flight is dropped. A change
/// that does not load (a key that does not match its certificate yet, halfway through an update) leaves the
/// last good contexts in force.
public final class ReloadingTLSCredentials: Sendable {
    /// What a reload found.
    public enum ReloadOutcome: Sendable {
        case unchanged
        /// The new contexts are in force; the certificate's serial number, for the log.
        case reloaded(serialNumber: String)
        case failed(TLSSetupError)
    }

    private struct Loaded: @unchecked Sendable {
        // @unchecked: TLSContext is immutable and thread-safe once made.
        let server: TLSContext
        let client: TLSContext
        let contents: [Data]
        let serialNumber: String
        let expiry: CertificateExpiry
    }

    /// When the certificates in force stop being valid, in seconds since 1970 (nil where a file's first
    /// certificate cannot be read): the process's own certificate, and the earliest of the trusted CAs.
    public struct CertificateExpiry: Sendable, Equatable {
        public let identity: Int64?
        public let trust: Int64?
    }

    public let files: MutualTLSFiles
    private let loaded: Mutex<Loaded>

    /// Loads the files; throws ``Crypto/TLSSetupError`` naming the file that cannot be read or used.
    public init(files: MutualTLSFiles) throws {
        self.files = files
        loaded = Mutex(try Self.load(files))
    }

    /// The server context for the next connection.
    public var server: TLSContext { loaded.withLock { $0.server } }
    /// The client context for the next connection.
    public var client: TLSContext { loaded.withLock { $0.client } }
    /// The serial number of the certificate in force.
    public var serialNumber: String { loaded.withLock { $0.serialNumber } }
    /// When the certificates in force expire.
    public var expiry: CertificateExpiry { loaded.withLock { $0.expiry } }

    /// Reads the files and, when their contents changed, makes and installs new contexts.
    public func reloadIfChanged() -> ReloadOutcome {
        let previous = loaded.withLock { $0.contents }
        do {
            guard try Self.read(files) != previous else { return .unchanged }
            let next = try Self.load(files)
            loaded.withLock { $0 = next }
            return .reloaded(serialNumber: next.serialNumber)
        } catch let error as TLSSetupError {
            return .failed(error)
        } catch {
            return .failed(TLSSetupError(.certificateChain, path: files.certificateChainPath, "\(error)"))
        }
    }

    private static func read(_ files: MutualTLSFiles) throws -> [Data] {
        let roles: [(TLSSetupError.File, String)] = [
            (.certificateChain, files.certificateChainPath), (.privateKey, files.privateKeyPath),
            (.trustedCertificates, files.trustedCAPath),
        ]
        return try roles.map { role, path in
            guard let data = FileManager.default.contents(atPath: path) else {
                throw TLSSetupError(role, path: path, "cannot be read (missing, or not readable by this user)")
            }
            guard data.count <= 1 << 20 else { throw TLSSetupError(role, path: path, "is larger than 1 MiB") }
            return data
        }
    }

    private static func load(_ files: MutualTLSFiles) throws -> Loaded {
        let contents = try read(files)
        let server = try TLSContext.server(
            certificateChainPath: files.certificateChainPath, privateKeyPath: files.privateKeyPath,
            clientCertificates: .verifyAndRecord(trustedCAPath: files.trustedCAPath), minimumVersion: .tls13)
        let client = try TLSContext.client(
            trustedCAPath: files.trustedCAPath, certificateChainPath: files.certificateChainPath,
            privateKeyPath: files.privateKeyPath, minimumVersion: .tls13)
        let chain = String(decoding: contents[0], as: UTF8.self)
        let leaf = try? Certificate(pemEncoded: chain)
        let serialNumber = leaf?.serialNumberHex ?? "unknown"
        let expiry = CertificateExpiry(
            identity: leaf?.notAfterUnixSeconds,
            trust: pemCertificates(String(decoding: contents[2], as: UTF8.self)).compactMap(\.notAfterUnixSeconds).min()
        )
        return Loaded(server: server, client: client, contents: contents, serialNumber: serialNumber, expiry: expiry)
    }

    /// The certificates of a PEM bundle, at most 64; blocks that do not parse are skipped.
    private static func pemCertificates(_ bundle: String) -> [Certificate] {
        let end = "-----END CERTIFICATE-----"
        var certificates: [Certificate] = []
        for block in bundle.components(separatedBy: end).prefix(64) where block.contains("-----BEGIN CERTIFICATE-----")
        {
            if let certificate = try? Certificate(pemEncoded: block + end + "\n") { certificates.append(certificate) }
        }
        return certificates
    }
}
