import COpenSSL

/// An OpenSSL operation that failed, with the library's queued error text for the log.
///
/// The text is for operators; it never contains key material.
public struct CryptoError: Error, CustomStringConvertible, Sendable {
    /// What was being attempted, for example `"EVP_DigestVerify"`.
    public let operation: String
    /// OpenSSL's error queue, drained at the point of failure.
    public let details: String

    /// Captures and clears OpenSSL's thread-local error queue.
    public init(_ operation: String) {
        self.operation = operation
        self.details = CryptoError.drainErrorQueue()
    }

    public var description: String {
        details.isEmpty ? "\(operation) failed" : "\(operation) failed: \(details)"
    }

    /// Empties OpenSSL's thread-local error queue, returning its messages joined by "; ".
    public static func drainErrorQueue() -> String {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages.joined(separator: "; ")
    }
}
