/// What fetching one well-known file brought back, as the checks need it; the fetching is the caller's.
public enum FetchedDocument: Sendable, Equatable {
    /// A response: its status, `Content-Type` and `Location` if any, and its body (cut at the fetch's limit when
    /// `exceededLimit`).
    case response(status: Int, contentType: String?, location: String?, body: [UInt8], exceededLimit: Bool)
    /// No response: the connection, the TLS handshake or the time limit failed, in the transport's words.
    case failed(String)
}
