import HTTPMessages
import JSON

/// The public listener's route table: every route of docs/api.md and the operational ones, each with what its
/// middleware enforces.
extension GatewayApplication {
    /// The public API's routes (docs/api.md) and the operational ones.
    static let routes: [Route] = [
        Route("POST", "/v1/accounts/password", limit: .signUp, body: .json) { try await $0.createPasswordAccount($1) },
        Route("POST", "/v1/sessions/password", body: .json) { try await $0.signInWithPassword($1) },
        Route(
            "POST", "/v1/passkeys/registrations", limit: .start, session: .required(.fullAccessOrRecovery),
            body: .optionalJSON
        ) {
            try await $0.beginRegistration($1)
        },
        Route(
            "POST", "/v1/passkeys/registrations/finish", limit: .passkey, session: .required(.fullAccess), body: .json
        ) {
            try await $0.finishRegistration($1)
        },
        Route("POST", "/v1/passkeys/account-registrations", limit: .signUp, body: .optionalJSON) {
            try await $0.beginAccountRegistration($1)
        },
        Route("POST", "/v1/passkeys/account-registrations/finish", limit: .passkey, body: .json) {
            try await $0.finishAccountRegistration($1)
        },
        Route("POST", "/v1/passkeys/authentications", limit: .start, body: .optionalJSON) {
            try await $0.beginAuthentication($1)
        },
        Route("POST", "/v1/passkeys/authentications/finish", limit: .passkey, body: .json) {
            try await $0.finishAuthentication($1)
        },
        Route("GET", "/v1/session", session: .required(.fullAccess)) { try await $0.currentSession($1) },
        Route("POST", "/v1/session/refresh", limit: .refresh, body: .optionalJSON) { try await $0.refreshSession($1) },
        Route("DELETE", "/v1/session", session: .required(.fullAccessOrRecovery)) { try await $0.signOut($1) },
        Route("GET", "/v1/sessions", session: .required(.fullAccess)) { try await $0.listSessions($1) },
        Route("DELETE", "/v1/sessions/{sessionID}", session: .recentSignIn) { try await $0.revokeSession($1) },
        Route("GET", "/v1/account", session: .required(.fullAccess)) { try await $0.account($1) },
        Route("PATCH", "/v1/account", session: .required(.fullAccess), body: .json) { try await $0.renameAccount($1) },
        Route("GET", "/v1/passkeys", session: .required(.fullAccess)) { try await $0.listPasskeys($1) },
        Route("PATCH", "/v1/passkeys/{credentialID}", session: .required(.fullAccess), body: .json) {
            try await $0.renamePasskey($1)
        },
        Route("DELETE", "/v1/passkeys/{credentialID}", session: .recentSignIn) { try await $0.removePasskey($1) },
        Route("GET", "/v1/passkey-providers/{aaguid}/icons/{variant}") { try $0.providerIcon($1) },
        Route("POST", "/v1/account/email/verification", session: .recentSignIn, body: .optionalJSON) {
            try await $0.requestEmailVerification($1)
        },
        Route("POST", "/v1/account/email/verify", session: .recentSignIn, body: .json) {
            try await $0.verifyEmail($1)
        },
        Route("POST", "/v1/account/recovery-codes", session: .recentSignIn, body: .optionalJSON) {
            try await $0.generateRecoveryCodes($1)
        },
        Route("DELETE", "/v1/account/password", session: .recentSignIn) { try await $0.removePassword($1) },
        Route("POST", "/v1/account/password", session: .recentSignIn, body: .json) { try await $0.setPassword($1) },
        Route("POST", "/v1/session/reauthentication/password", session: .required(.fullAccess), body: .json) {
            try await $0.reauthenticateWithPassword($1)
        },
        Route(
            "POST", "/v1/session/reauthentication/passkey", limit: .passkey, session: .required(.fullAccess),
            body: .json
        ) { try await $0.reauthenticateWithPasskey($1) },
        Route("POST", "/v1/recovery", body: .json) { try await $0.startRecovery($1) },
        Route("POST", "/v1/recovery/finish", body: .json) { try await $0.finishRecovery($1) },
        Route("POST", "/v1/recovery/passkeys/finish", limit: .passkey, session: .required(.recoveryOnly), body: .json) {
            try await $0.finishRecoveryRegistration($1)
        },
        Route("POST", "/v1/recovery/password/finish", session: .required(.recoveryOnly), body: .json) {
            try await $0.finishRecoveryWithPassword($1)
        },
        Route("GET", "/.well-known/apple-app-site-association") { try $0.wellKnownDocument($1) },
        Route("GET", "/.well-known/assetlinks.json") { try $0.wellKnownDocument($1) },
        Route("GET", "/.well-known/webauthn") { try $0.wellKnownDocument($1) },
        Route("GET", "/.well-known/passkey-endpoints") { try $0.wellKnownDocument($1) },
        Route("GET", "/.well-known/jwks.json") { try await $0.jsonWebKeySet($1) },
        Route("GET", "/.well-known/openid-configuration") { try $0.openIDConfiguration($1) },
        Route("GET", "/healthz") { _, _ in GatewayApplication.json(200, ["status": "ok"]) },
        Route("GET", "/readyz") { application, _ in await application.readiness() },
        Route("GET", "/metrics") { application, _ in
            // With a metrics listener of its own, the public one does not tell.
            guard application.configuration.gatewayMetricsListen == nil else { throw APIProblem.notFound }
            return MetricsEndpoint.exposition(application.metrics)
        },
        Route("GET", "/openapi.json") { _, _ in
            GatewayApplication.jsonResponse(200, bytes: OpenAPIDocument.bytes, cacheable: true)
        },
    ]

    static let router = Router(routes: routes)
}
