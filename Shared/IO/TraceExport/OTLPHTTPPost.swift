import CurlTransport

/// One blocking HTTP/1.1 POST of an OTLP body over a new connection (`Connection: close`), on libcurl
/// (`CurlTransport`): plain HTTP only, the connect, the write and the read of the response all within one overall
/// timeout. Only the status line matters: 2xx is success, even when the rest of the response fails to arrive. The
/// response's body is read to its end and dropped.
enum OTLPHTTPPost {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func send(
        _ body: [UInt8], host: String, port: Int, path: String, timeoutMilliseconds: Int32
    ) -> Result<Void, Failure> {
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let timeout = Duration.milliseconds(timeoutMilliseconds)
        let request = HTTPRequest(
            method: "POST", url: "http://\(authority)\(path)",
            headers: [(name: "Content-Type", value: "application/x-protobuf"), (name: "Connection", value: "close")],
            body: body, userAgent: "passkey-server", protocols: "http", connectTimeout: timeout, timeout: timeout)
        let response: HTTPResponse
        do {
            response = try HTTPClient().perform(request)
        } catch {
            // As soon as the status line arrived, it decides, whatever happened to the rest of the response.
            if let status = error.status {
                return (200..<300).contains(status) ? .success(()) : .failure(Failure(description: "HTTP \(status)"))
            }
            switch error.code {
            case .couldNotResolve: return .failure(Failure(description: "cannot resolve \(host)"))
            case .timedOut: return .failure(Failure(description: "no response within the export timeout"))
            case .incompleteResponse, .malformedResponse: return .failure(Failure(description: "no HTTP response"))
            case .couldNotConnect, .certificateRejected, .responseTooLarge, .other:
                return .failure(Failure(description: error.description))
            }
        }
        guard (200..<300).contains(response.status) else {
            return .failure(Failure(description: "HTTP \(response.status)"))
        }
        return .success(())
    }
}
