import HTTPMessages

/// Writes HTTP/1.1 responses. Every response carries `content-length` (bodies here are small and complete).
public enum HTTP1ResponseSerializer {
    /// The bytes of `response`; `connection: close` is added when the connection ends after it. For HEAD requests
    /// the body is omitted but its length is still announced.
    public static func serialize(_ response: HTTPResponse, keepAlive: Bool, headRequest: Bool = false) -> [UInt8] {
        var text = "HTTP/1.1 \(response.status) \(HTTPResponse.reasonPhrase(response.status))\r\n"
        for (name, value) in response.headers where name != "content-length" && name != "connection" {
            // Header values come from this program; CR and LF are still stripped so no value can split a header.
            var safe = String.UnicodeScalarView()
            safe.append(contentsOf: value.unicodeScalars.filter { $0 != "\r" && $0 != "\n" })
            text += name + ": " + String(safe) + "\r\n"
        }
        if response.status != 204 && response.status != 304 && response.status >= 200 {
            text += "content-length: \(response.body.count)\r\n"
        }
        if !keepAlive { text += "connection: close\r\n" }
        text += "\r\n"
        var bytes = Array(text.utf8)
        if !headRequest { bytes.append(contentsOf: response.body) }
        return bytes
    }

    /// The interim response to `Expect: 100-continue`.
    public static let continueResponse = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
}
