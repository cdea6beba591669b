import Encoding

/// Where and how a process exports its trace spans, from the OpenTelemetry SDK's standard variables:
/// - `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL) or `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL to which
///   `/v1/traces` is added): an `http://` OTLP/HTTP receiver, usually the collector agent on the node or a sidecar.
///   Unset: no spans are exported (trace IDs are still made, passed on and logged).
/// - `OTEL_TRACES_SAMPLER_ARG`: the share of new traces sampled, 0…1 (default 1). A trace continued from a
///   caller's `traceparent` keeps the caller's decision (parent-based sampling).
/// - `OTEL_BSP_MAX_QUEUE_SIZE` (2048), `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (512), `OTEL_BSP_SCHEDULE_DELAY` (1000 ms)
///   and `OTEL_BSP_EXPORT_TIMEOUT` (2000 ms): the bounded queue, the batch, the pause between exports and the
///   longest an export may take. A full queue drops spans rather than delay requests.
/// - `OTEL_RESOURCE_ATTRIBUTES`: `key=value,…` added to every span's resource (for example
///   `deployment.environment=production`); at most 32 pairs.
public struct TracingConfiguration: Sendable, Equatable {
    /// The OTLP/HTTP receiver.
    public struct Endpoint: Sendable, Equatable {
        public var host: String
        public var port: Int
        /// The request path, `/v1/traces` unless the full URL named another.
        public var path: String

        public init(host: String, port: Int, path: String) {
            self.host = host
            self.port = port
            self.path = path
        }
    }

    public var endpoint: Endpoint?
    public var sampleRatio: Double
    public var maximumQueueSize: Int
    public var maximumBatchSize: Int
    /// Seconds.
    public var scheduleDelay: Double
    /// Seconds.
    public var exportTimeout: Double
    public var resourceAttributes: [(key: String, value: String)]

    public init(_ env: EnvironmentReader) throws {
        if let url = env.raw("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            endpoint = try Self.endpoint(url, variable: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", addingTracesPath: false)
        } else if let url = env.raw("OTEL_EXPORTER_OTLP_ENDPOINT") {
            endpoint = try Self.endpoint(url, variable: "OTEL_EXPORTER_OTLP_ENDPOINT", addingTracesPath: true)
        } else {
            endpoint = nil
        }
        let ratioText = env.string("OTEL_TRACES_SAMPLER_ARG", default: "1")
        guard let ratio = Double(ratioText), ratio >= 0, ratio <= 1 else {
            throw ConfigurationError(
                variable: "OTEL_TRACES_SAMPLER_ARG", problem: "expected a share of traces from 0 to 1, got \(ratioText)"
            )
        }
        sampleRatio = ratio
        maximumQueueSize = try env.integer("OTEL_BSP_MAX_QUEUE_SIZE", default: 2048, range: 1...1_000_000)
        maximumBatchSize = try env.integer("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", default: 512, range: 1...maximumQueueSize)
        scheduleDelay = Double(try env.integer("OTEL_BSP_SCHEDULE_DELAY", default: 1000, range: 10...600_000)) / 1000
        exportTimeout = Double(try env.integer("OTEL_BSP_EXPORT_TIMEOUT", default: 2000, range: 10...600_000)) / 1000
        resourceAttributes = try Self.attributes(env.raw("OTEL_RESOURCE_ATTRIBUTES") ?? "")
    }

    /// Reads `http://host[:port][/path]`; https is refused with the reason (the exporter speaks plain HTTP to a
    /// collector next to it, which forwards over TLS).
    static func endpoint(_ url: String, variable: String, addingTracesPath: Bool) throws -> Endpoint {
        guard url.utf8.count <= 2048 else {
            throw ConfigurationError(variable: variable, problem: "longer than 2048 bytes")
        }
        if url.hasPrefix("https://") {
            throw ConfigurationError(
                variable: variable,
                problem:
                    "https is not supported: point it at an OpenTelemetry Collector on the node or in the pod (http://…:4318), which forwards over TLS"
            )
        }
        guard url.hasPrefix("http://") else {
            throw ConfigurationError(variable: variable, problem: "expected http://host[:port][/path], got \(url)")
        }
        let rest = url.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" }
        var path = String(rest.dropFirst(authority.count))
        guard !authority.isEmpty, !authority.contains("@"), !path.contains("?"), !path.contains("#"),
            path.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else {
            throw ConfigurationError(variable: variable, problem: "expected http://host[:port][/path], got \(url)")
        }
        var host = String(authority)
        var port = 80
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw ConfigurationError(variable: variable, problem: "an IPv6 address must end with ], got \(url)")
            }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let number = Int(after.dropFirst()), (1...65535).contains(number) else {
                    throw ConfigurationError(variable: variable, problem: "expected a port from 1 to 65535, got \(url)")
                }
                port = number
            }
        } else if let colon = authority.lastIndex(of: ":") {
            guard let number = Int(authority[authority.index(after: colon)...]), (1...65535).contains(number) else {
                throw ConfigurationError(variable: variable, problem: "expected a port from 1 to 65535, got \(url)")
            }
            host = String(authority[..<colon])
            port = number
        }
        guard !host.isEmpty, host.utf8.count <= 253 else {
            throw ConfigurationError(variable: variable, problem: "expected a host name, got \(url)")
        }
        if addingTracesPath {
            while path.hasSuffix("/") { path.removeLast() }
            path += "/v1/traces"
        } else if path.isEmpty {
            path = "/"
        }
        return Endpoint(host: host, port: port, path: path)
    }

    static func attributes(_ text: String) throws -> [(key: String, value: String)] {
        var pairs: [(key: String, value: String)] = []
        for item in text.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 128, parts[1].utf8.count <= 256,
                pairs.count < 32
            else {
                throw ConfigurationError(
                    variable: "OTEL_RESOURCE_ATTRIBUTES",
                    problem:
                        "expected at most 32 key=value pairs separated by commas (keys up to 128 bytes, values up to 256)"
                )
            }
            pairs.append((String(parts[0]).trimmingWhitespace(), String(parts[1]).trimmingWhitespace()))
        }
        return pairs
    }

    public static func == (lhs: TracingConfiguration, rhs: TracingConfiguration) -> Bool {
        lhs.endpoint == rhs.endpoint && lhs.sampleRatio == rhs.sampleRatio
            && lhs.maximumQueueSize == rhs.maximumQueueSize && lhs.maximumBatchSize == rhs.maximumBatchSize
            && lhs.scheduleDelay == rhs.scheduleDelay && lhs.exportTimeout == rhs.exportTimeout
            && lhs.resourceAttributes.elementsEqual(rhs.resourceAttributes) { $0 == $1 }
    }
}
