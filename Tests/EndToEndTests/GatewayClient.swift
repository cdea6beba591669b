import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A JSON response from the gateway.
struct GatewayResponse: Sendable {
    let status: Int
    let headers: [String: String]
    let body: Data

    /// The body as a JSON object (empty when it is not one).
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    var contentType: String { headers["content-type"] ?? "" }
    /// A problem document's `code`.
    var code: String? { json["code"] as? String }
    var reason: String? { json["reason"] as? String }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// Talks to the gateway over HTTP/1.1 the way an app does.
struct GatewayClient: Sendable {
    let baseURL: URL
    let session: URLSession

    init(baseURL: URL) {
        self.baseURL = baseURL
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 15
        configuration.httpMaximumConnectionsPerHost = 64
        self.session = URLSession(configuration: configuration)
    }

    func send(
        _ method: String, _ path: String, json: Any? = nil, body: Data? = nil, bearer: String? = nil,
        headers: [String: String] = [:]
    ) async throws -> GatewayResponse {
        var request = URLRequest(url: URL(string: path, relativeTo: baseURL)!)
        request.httpMethod = method
        if let json {
            request.httpBody = try JSONSerialization.data(withJSONObject: json)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        } else if let body {
            request.httpBody = body
        }
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<(Data, URLResponse), Error>) in
            session.dataTask(with: request) { data, response, error in
                if let error { return continuation.resume(throwing: error) }
                continuation.resume(returning: (data ?? Data(), response!))
            }.resume()
        }
        let http = response as! HTTPURLResponse
        var headers: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            headers[String(describing: key).lowercased()] = String(describing: value)
        }
        return GatewayResponse(status: http.statusCode, headers: headers, body: data)
    }

    func post(_ path: String, _ json: Any, bearer: String? = nil) async throws -> GatewayResponse {
        try await send("POST", path, json: json, bearer: bearer)
    }

    func get(_ path: String, bearer: String? = nil) async throws -> GatewayResponse {
        try await send("GET", path, bearer: bearer)
    }
}
