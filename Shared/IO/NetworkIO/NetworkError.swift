#if canImport(Glibc)
    import Glibc
#endif

/// An error from the networking layer: a stable code, a reason and where it was raised.
public struct NetworkError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, as a small stable set.
    public enum Code: Sendable, Equatable {
        case system
        case invalidAddress
        case connectionRefused
        case connectionClosed
        case tlsFailure
    }

    /// The stable code tests and callers compare.
    public let code: Code
    /// A human-readable reason, safe to log.
    public let reason: String
    /// The `errno` value if a system call failed.
    public let errno: Int32?
    /// Where the error was raised.
    public let location: String

    /// Creates an error.
    public init(
        _ code: Code, _ reason: String, errno: Int32? = nil, file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.reason = reason
        self.errno = errno
        self.location = "\(file):\(line)"
    }

    public var description: String {
        if let errno { return "\(code): \(reason) (errno \(errno): \(String(cString: strerror(errno))))" }
        return "\(code): \(reason)"
    }
}
