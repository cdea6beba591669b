import AccessTokens
import HTTPMessages
import JSON
import ServiceContracts

/// Sessions for backends and browsers (docs/sessions.md): the session document every sign-in answers with, the
/// refresh route, the JWKS and the discovery document, and the refresh cookie of browsers in cookie mode.
extension GatewayApplication {
    /// The refresh cookie's name; it is sent only to the refresh route.
    static let refreshCookieName = "passkey_refresh"
    static let refreshPath = "/v1/session/refresh"
    /// The longest refresh token read; ours are 74 characters.
    static let refreshTokenLimit = 256

    /// A sign-in's answer: the session document, with the refresh token in an `HttpOnly` cookie instead of the
    /// body when cookie mode is on and a browser of a known origin asked.
    func sessionResponse(
        _ status: Int, _ issued: IssuedSession, _ context: PublicContext, extra: [(String, JSONValue)] = []
    )
        -> HTTPResponse
    {
        let inCookie = !issued.refreshToken.isEmpty && browserOrigin(of: context) != nil && configuration.refreshCookie
        let now = settings.now()
        var document = ResponseDocuments.session(issued, includingRefreshToken: !inCookie, now: now)
        if case .object(var object) = document {
            for (key, value) in extra { object[key] = value }
            document = .object(object)
        }
        var response = Self.json(status, document)
        if inCookie {
            let seconds = max(0, (issued.refreshTokenExpiresAtUnixMilliseconds - now) / 1000)
            response.headers.add("set-cookie", Self.refreshCookie(value: issued.refreshToken, maxAge: seconds))
        }
        return response
    }

    /// The `Set-Cookie` value of the refresh cookie: `HttpOnly`, `Secure`, `SameSite=Strict`, sent to the refresh
    /// route only; `maxAge` 0 deletes it.
    static func refreshCookie(value: String, maxAge: Int64) -> String {
        "\(refreshCookieName)=\(value); Path=\(refreshPath); Max-Age=\(maxAge); HttpOnly; Secure; SameSite=Strict"
    }

    /// The request's `Origin` when it is one of the relying party's web origins or a CORS origin: the only
    /// browsers cookie mode serves, and the CSRF check of the refresh route.
    func browserOrigin(of context: PublicContext) -> String? {
        guard let origin = context.request.headers["origin"],
            configuration.origins.contains(origin) || configuration.corsOrigins.contains(origin)
        else { return nil }
        return origin
    }

    func refreshSession(_ context: PublicContext) async throws -> HTTPResponse {
        let body = context.body
        var token = try body.optionalString("refreshToken")
        if token == nil, configuration.refreshCookie,
            let cookie = Self.cookie(Self.refreshCookieName, in: context.request)
        {
            // A cookie rides along with any request the browser makes, so the request must come from one of our
            // own pages: a cross-site form or fetch has another Origin, or none.
            guard browserOrigin(of: context) != nil else {
                throw APIProblem(
                    status: 403, code: "forbidden",
                    detail: "A refresh with the cookie must come from an allowed origin.")
            }
            token = cookie
        }
        guard let token else {
            throw APIProblem(
                status: 401, code: "unauthenticated", reason: "refresh_token_invalid",
                detail: "No refresh token was sent.",
                headers: [("www-authenticate", "Bearer")])
        }
        guard token.utf8.count <= Self.refreshTokenLimit else {
            throw APIProblem.invalidRequest("refreshToken is longer than \(Self.refreshTokenLimit) characters.")
        }
        guard !AccessTokenFormat.looksLikeJWT(token) else {
            throw APIProblem.invalidRequest("refreshToken takes the refresh token, not an access token.")
        }
        var request = RefreshSessionRequest()
        request.refreshToken = token
        do {
            let issued = try await sessionService(context).refreshSession(request)
            return sessionResponse(200, issued, context)
        } catch var problem as APIProblem where problem.status == 401 && configuration.refreshCookie {
            // A refresh token that no longer works is dropped from the browser too.
            problem.headers.append(("set-cookie", Self.refreshCookie(value: "", maxAge: 0)))
            throw problem
        }
    }

    func jsonWebKeySet(_ context: PublicContext) async throws -> HTTPResponse {
        guard let document = await publishedKeys.document() else { throw APIProblem.unavailable }
        return Self.jsonResponse(200, bytes: document, cacheable: true)
    }

    func openIDConfiguration(_ context: PublicContext) throws -> HTTPResponse {
        Self.jsonResponse(200, bytes: discoveryDocument, cacheable: true)
    }

    /// The discovery document: what a JWT consumer reads to find the keys. It names no OAuth or OpenID flow, as
    /// none is served.
    static func discoveryDocument(issuer: String) -> [UInt8] {
        let base = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        let document: JSONValue = [
            "issuer": .string(issuer),
            "jwks_uri": .string(base + "/.well-known/jwks.json"),
            "subject_types_supported": ["public"],
            "response_types_supported": [],
            "token_endpoint_auth_methods_supported": [],
            "access_token_signing_alg_values_supported": .array(JWSAlgorithm.allCases.map { .string($0.rawValue) }),
        ]
        return document.serialized()
    }

    /// The value of cookie `name` in the request's `Cookie` headers, if present and of a sane size.
    static func cookie(_ name: String, in request: HTTPRequest) -> String? {
        for header in request.headers.values("cookie") where header.utf8.count <= 4096 {
            for pair in header.split(separator: ";") {
                let trimmed = pair.drop { $0 == " " }
                guard let equals = trimmed.firstIndex(of: "="), trimmed[..<equals] == name else { continue }
                let value = trimmed[trimmed.index(after: equals)...]
                return value.isEmpty ? nil : String(value)
            }
        }
        return nil
    }
}
