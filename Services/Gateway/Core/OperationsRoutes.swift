import HTTPMessages
import JSON

/// The operational routes' handlers: readiness and the association files.
extension GatewayApplication {
    /// An association file (`/.well-known/...`), made from configuration at start.
    func wellKnownDocument(_ context: PublicContext) throws -> HTTPResponse {
        guard let document = wellKnown[context.request.path] else { throw APIProblem.notFound }
        return Self.jsonResponse(200, bytes: document, cacheable: true)
    }

    /// 200 when every service answers its health check with SERVING, else 503; either way each service's state.
    func readiness() async -> HTTPResponse {
        let services = BackendService.allCases
        let results = await withTaskGroup(of: (BackendService, Bool).self) { group in
            for service in services {
                group.addTask { [backends = backend.backends] in (service, await backends.isServing(service)) }
            }
            var results: [BackendService: Bool] = [:]
            for await (service, serving) in group { results[service] = serving }
            return results
        }
        let ready = services.allSatisfy { results[$0] == true }
        let states = JSONObject(
            services.map { ($0.rawValue, .string(results[$0] == true ? "serving" : "unavailable")) })
        var body: JSONObject = ["status": .string(ready ? "ready" : "unavailable"), "services": .object(states)]
        // A configuration that serves but cannot work for devices (PASSKEY_RP_ID left at localhost) stays ready,
        // and says so here as well as in the log at start.
        if let warning = relyingPartyIDWarning { body["warnings"] = [.string(warning)] }
        return Self.json(ready ? 200 : 503, .object(body))
    }
}
