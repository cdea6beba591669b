import Encoding
import HTTPMessages

/// Writes HTTP/1.1 responses. Every response carries `content-length` (bodies here are small and complete).
public enum HTTP1ResponseSerializer {
    /// The bytes of `response`; `connection: close` is added when the connection ends after it. For HEAD requests
    /// the body is omitted but its length is still announced.
    public static func serialize(_ response: HTTPResponse, keepAlive: Bool, headRequest: Bool = false) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256 + (headRequest ? 0 : response.body.count))
        bytes.append(contentsOf: "HTTP/1.1 ".utf8)
        DecimalText.append(Int64(response.status), width: 3, to: &bytes)
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: HTTPResponse.reasonPhrase(response.status).utf8)
        bytes.append(contentsOf: "\r\n".utf8)
        for (name, value) in response.headers where name != "content-length" && name != "connection" {
            bytes.append(contentsOf: name.utf8)
            bytes.append(contentsOf: ": ".utf8)
            // Header values come from this program; CR and LF are still dropped so no value can split a header.
            for byte in value.utf8 where byte != UInt8(ascii: "\r") && byte != UInt8(ascii: "\n") {
                bytes.append(byte)
            }
            bytes.append(contentsOf: "\r\n".utf8)
        }
        if response.status != 204 && response.status != 304 && response.status >= 200 {
            bytes.append(contentsOf: "content-length: ".utf8)
            DecimalText.append(Int64(response.body.count), width: 1, to: &bytes)
            bytes.append(contentsOf: "\r\n".utf8)
        }
        if !keepAlive { bytes.append(contentsOf: "connection: close\r\n".utf8) }
        bytes.append(contentsOf: "\r\n".utf8)
        if !headRequest { bytes.append(contentsOf: response.body) }
        return bytes
    }

    /// The interim response to `Expect: 100-continue`.
    public static let continueResponse = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
}
