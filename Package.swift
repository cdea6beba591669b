// swift-tools-version:6.0
import PackageDescription

/// Release-build flags for the modules on every request's path. Their state is loop-confined or local and accessed
/// dozens of times per request: each runtime exclusivity check would be a thread-local lookup and a set insertion,
/// and their small functions are worth inlining into the modules that call them. Debug builds, which the test suite
/// runs, keep the exclusivity checks, so an overlapping access still traps there.
let hotPathSettings: [SwiftSetting] = [
    .unsafeFlags(["-enforce-exclusivity=unchecked", "-cross-module-optimization"], .when(configuration: .release))
]

// MARK: - C libraries: one system-library target each, with its pkg-config name and apt provider.

let cLibraryTargets: [Target] = [
    .systemLibrary(
        name: "COpenSSL", path: "Shared/System/COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
    .systemLibrary(name: "CLibPQ", path: "Shared/System/CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
    .systemLibrary(
        name: "CNGHTTP2", path: "Shared/System/CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]
    ),
    .systemLibrary(
        name: "CArgon2", path: "Shared/System/CArgon2", pkgConfig: "libargon2", providers: [.apt(["libargon2-dev"])]),
    .systemLibrary(
        name: "CXCrypt", path: "Shared/System/CXCrypt", pkgConfig: "libxcrypt", providers: [.apt(["libcrypt-dev"])]),
    .systemLibrary(
        name: "CCurl", path: "Shared/System/CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
]

// MARK: - Crypto on OpenSSL (digests, random, keys, signatures, X.509, TLS)

let cryptoTargets: [Target] = [
    .target(name: "Crypto", dependencies: ["COpenSSL"], path: "Shared/Domain/Crypto"),
    .testTarget(name: "CryptoTests", dependencies: ["COpenSSL", "Crypto"], path: "Tests/CryptoTests"),
]

// MARK: - Domain, persistence and password hashing

let persistenceTargets: [Target] = [
    .target(name: "Domain", dependencies: ["Encoding"], path: "Shared/Domain/Domain"),
    .target(name: "AccessTokens", dependencies: ["Crypto", "Encoding", "JSON"], path: "Shared/Domain/AccessTokens"),
    .testTarget(
        name: "AccessTokensTests",
        dependencies: ["AccessTokens", "Crypto", "Domain", "Encoding", "JSON", "SessionIssuance"],
        path: "Tests/AccessTokensTests"),
    .target(
        name: "SessionIssuance", dependencies: ["AccessTokens", "Crypto", "Domain", "Encoding"],
        path: "Shared/Domain/SessionIssuance"),
    .target(name: "ServiceIdentity", path: "Shared/Domain/ServiceIdentity"),
    .testTarget(name: "ServiceIdentityTests", dependencies: ["ServiceIdentity"], path: "Tests/ServiceIdentityTests"),
    .target(name: "WorkerThreads", path: "Shared/Foundations/WorkerThreads"),
    .testTarget(name: "WorkerThreadsTests", dependencies: ["WorkerThreads"], path: "Tests/WorkerThreadsTests"),
    .target(
        name: "Postgres", dependencies: ["CLibPQ", "Encoding", "NetworkIO", "Observability", "WorkerThreads"],
        path: "Shared/IO/Postgres",
        swiftSettings: hotPathSettings),
    .target(
        name: "PostgresStorage",
        dependencies: [
            "AccessTokens", "AdminAccess", "Crypto", "Domain", "Encoding", "JSON", "Observability", "Postgres",
            "SessionIssuance", "Webhooks",
        ],
        path: "Shared/IO/PostgresStorage",
        resources: [.copy("Migrations")]),
    .executableTarget(
        name: "passkey-migrate", dependencies: ["BuildInfo", "Postgres", "PostgresStorage"], path: "Services/Migrate"),
    .executableTarget(
        name: "passkey-admin",
        dependencies: [
            "AdminAccess", "BuildInfo", "Configuration", "Crypto", "CurlTransport", "DeploymentChecks", "Encoding",
            "IPAddresses", "JSON", "Observability", "Postgres", "PostgresStorage",
        ],
        path: "Services/AdminCLI"),
    .testTarget(
        name: "AdminCLITests", dependencies: ["passkey-admin", "CurlTransport", "StubHTTPServer"],
        path: "Tests/AdminCLITests"),
    .target(name: "PostgresTestSupport", dependencies: ["Postgres"], path: "Tests/PostgresTestSupport"),
    .target(
        name: "PasswordHashing", dependencies: ["CArgon2", "CXCrypt", "Crypto", "Encoding", "WorkerThreads"],
        path: "Shared/Domain/PasswordHashing"),
    .testTarget(name: "PasswordHashingTests", dependencies: ["PasswordHashing"], path: "Tests/PasswordHashingTests"),
    .target(
        name: "AccountImport", dependencies: ["Crypto", "Domain", "Encoding", "JSON", "PasswordHashing"],
        path: "Shared/Domain/AccountImport"),
    .testTarget(
        name: "AccountImportTests", dependencies: ["AccountImport", "Domain", "Encoding"],
        path: "Tests/AccountImportTests"),
    .target(
        name: "AccountImportStorage", dependencies: ["AccountImport", "Crypto", "Domain", "Encoding", "Postgres"],
        path: "Shared/IO/AccountImportStorage"),
    .executableTarget(
        name: "passkey-import", dependencies: ["AccountImport", "AccountImportStorage", "BuildInfo", "Postgres"],
        path: "Services/PasskeyImport"),
    .target(name: "Observability", dependencies: ["Encoding", "Protobuf"], path: "Shared/Foundations/Observability"),
    // The product's version (the VERSION file's) and the commit stamped beside the executables: --version and
    // passkey_build_info.
    .target(name: "BuildInfo", dependencies: ["Observability"], path: "Shared/Foundations/BuildInfo"),
    .testTarget(name: "BuildInfoTests", dependencies: ["BuildInfo", "Observability"], path: "Tests/BuildInfoTests"),
    .testTarget(
        name: "ObservabilityTests", dependencies: ["Observability", "Protobuf"], path: "Tests/ObservabilityTests"),
    .target(
        name: "Configuration", dependencies: ["Encoding", "PublicSuffixes"], path: "Shared/Foundations/Configuration"),
    // The Public Suffix List and its algorithm: which part of a host name is a public suffix, and the registrable
    // domain under it (the relying party ID's checks).
    .target(name: "PublicSuffixes", path: "Shared/Foundations/PublicSuffixes", resources: [.copy("Data")]),
    .testTarget(name: "PublicSuffixesTests", dependencies: ["PublicSuffixes"], path: "Tests/PublicSuffixesTests"),
    .testTarget(
        name: "ConfigurationTests",
        dependencies: [
            "ChallengeServiceCore", "Configuration", "GatewayCore", "ServiceIdentity", "SessionServiceCore",
            "VerificationServiceCore", "WebAuthn",
        ],
        path: "Tests/ConfigurationTests"),
    .target(name: "RateLimiting", path: "Shared/Foundations/RateLimiting"),
    .testTarget(name: "RateLimitingTests", dependencies: ["RateLimiting"], path: "Tests/RateLimitingTests"),
    .target(name: "HTTPMessages", path: "Shared/Foundations/HTTPMessages", swiftSettings: hotPathSettings),
    .target(
        name: "HTTP1", dependencies: ["Encoding", "HTTPMessages"], path: "Shared/Domain/HTTP1",
        swiftSettings: hotPathSettings),
    .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1", "HTTPMessages"], path: "Tests/HTTP1Tests"),
    .testTarget(name: "DomainTests", dependencies: ["Domain"], path: "Tests/DomainTests"),
    .testTarget(
        name: "PostgresTests", dependencies: ["NetworkIO", "Postgres", "PostgresTestSupport"],
        path: "Tests/PostgresTests"),
    .testTarget(
        name: "PostgresStorageTests",
        dependencies: [
            "AccessTokens", "AdminAccess", "Crypto", "PostgresStorage", "Postgres", "Domain", "Observability",
            "PostgresTestSupport", "SessionIssuance", "Webhooks",
        ],
        path: "Tests/PostgresStorageTests"),
]

// MARK: - Account recovery: one-time codes, recovery codes, mail templates; SMTP delivery on libcurl

let recoveryTargets: [Target] = [
    .target(
        name: "AccountRecovery", dependencies: ["Crypto", "Domain", "Encoding"], path: "Shared/Domain/AccountRecovery",
        resources: [.copy("Templates")]),
    .testTarget(
        name: "AccountRecoveryTests", dependencies: ["AccountRecovery", "Crypto", "Domain"],
        path: "Tests/AccountRecoveryTests"),
    // libcurl behind one module: the SMTP client of the mail outbox and the HTTP client of webhook deliveries.
    .target(name: "CurlTransport", dependencies: ["CCurl"], path: "Shared/IO/CurlTransport"),
    // Webhooks: Standard Webhooks secrets and signatures, endpoint URLs, the destination policy against SSRF,
    // backoff, and the endpoints' storage port; no I/O.
    .target(name: "IPAddresses", path: "Shared/Foundations/IPAddresses"),
    .testTarget(name: "IPAddressesTests", dependencies: ["IPAddresses"], path: "Tests/IPAddressesTests"),
    .target(name: "Webhooks", dependencies: ["Crypto", "Encoding", "IPAddresses"], path: "Shared/Domain/Webhooks"),
    .testTarget(
        name: "WebhooksTests", dependencies: ["Webhooks", "Crypto", "Encoding", "IPAddresses"],
        path: "Tests/WebhooksTests"),
    // Webhook deliveries: each endpoint's name resolved and checked against the policy, then one signed POST
    // pinned to the checked addresses.
    .target(
        name: "WebhookDelivery",
        dependencies: [
            "Configuration", "CurlTransport", "IPAddresses", "NameResolution", "NetworkIO", "Webhooks", "WorkerThreads",
        ],
        path: "Shared/IO/WebhookDelivery"),
    // Admin tokens (their form, digest, scopes, the access decision) and the admin API's storage port; no I/O.
    .target(name: "AdminAccess", dependencies: ["Crypto", "Domain", "Encoding"], path: "Shared/Domain/AdminAccess"),
    .testTarget(name: "AdminAccessTests", dependencies: ["AdminAccess", "Crypto"], path: "Tests/AdminAccessTests"),
    .target(
        name: "DeploymentChecks", dependencies: ["Configuration", "IPAddresses", "JSON", "PublicSuffixes"],
        path: "Shared/Domain/DeploymentChecks"),
    .testTarget(
        name: "DeploymentChecksTests", dependencies: ["Configuration", "DeploymentChecks"],
        path: "Tests/DeploymentChecksTests"),
    .target(
        name: "PasskeyProviders", dependencies: ["Encoding", "JSON"], path: "Shared/Domain/PasskeyProviders",
        resources: [.copy("Data")]),
    .testTarget(
        name: "PasskeyProvidersTests",
        dependencies: ["PasskeyProviders", "Encoding", "SoftwareAuthenticator", "WebAuthn"],
        path: "Tests/PasskeyProvidersTests"),
]

// MARK: - WebAuthn verification core and crypto

let webAuthnTargets: [Target] = [
    .target(name: "WebAuthn", dependencies: ["Crypto", "JSON", "Encoding"], path: "Shared/Domain/WebAuthn"),
    .target(
        name: "SoftwareAuthenticator", dependencies: ["WebAuthn", "Crypto", "COpenSSL", "Encoding"],
        path: "Tests/SoftwareAuthenticator"),
    .testTarget(
        name: "WebAuthnTests", dependencies: ["WebAuthn", "Crypto", "SoftwareAuthenticator", "JSON", "Encoding"],
        path: "Tests/WebAuthnTests"),
    .target(name: "PasskeyPolicy", dependencies: ["Configuration", "WebAuthn"], path: "Shared/Domain/PasskeyPolicy"),
    .testTarget(
        name: "PasskeyPolicyTests", dependencies: ["PasskeyPolicy", "Configuration", "WebAuthn"],
        path: "Tests/PasskeyPolicyTests"),
    .executableTarget(
        name: "webauthn-benchmark", dependencies: ["WebAuthn", "Crypto", "SoftwareAuthenticator", "Encoding"],
        path: "Tests/Benchmarks/WebAuthnBenchmark"),
]

// MARK: - RPC: event loop, HTTP/2, protobuf, gRPC, health

let rpcTargets: [Target] = [
    .target(name: "CNetworkIO", path: "Shared/System/CNetworkIO"),
    .target(
        name: "NetworkIO", dependencies: ["CNetworkIO"], path: "Shared/IO/NetworkIO", swiftSettings: hotPathSettings),
    .target(
        name: "HTTP2", dependencies: ["NetworkIO", "CNGHTTP2"], path: "Shared/IO/HTTP2", swiftSettings: hotPathSettings),
    .target(name: "Protobuf", path: "Shared/Foundations/Protobuf", swiftSettings: hotPathSettings),
    .target(
        name: "GRPC", dependencies: ["NetworkIO", "HTTP2", "Protobuf", "Encoding", "Observability"],
        path: "Shared/IO/GRPC", swiftSettings: hotPathSettings),
    .target(name: "TLSChannels", dependencies: ["Crypto", "NetworkIO"], path: "Shared/IO/TLSChannels"),
    .target(name: "RuntimeMetrics", dependencies: ["NetworkIO", "Observability"], path: "Shared/IO/RuntimeMetrics"),
    .target(
        name: "TraceExport", dependencies: ["Configuration", "CurlTransport", "NetworkIO", "Observability"],
        path: "Shared/IO/TraceExport"),
    .testTarget(
        name: "TraceExportTests", dependencies: ["TraceExport", "Configuration", "Observability"],
        path: "Tests/TraceExportTests"),
    .testTarget(
        name: "RuntimeMetricsTests", dependencies: ["RuntimeMetrics", "NetworkIO", "Observability"],
        path: "Tests/RuntimeMetricsTests"),
    .target(
        name: "ServiceTransport",
        dependencies: [
            "Configuration", "Crypto", "GRPC", "NetworkIO", "Observability", "ServiceIdentity", "TLSChannels",
        ],
        path: "Shared/IO/ServiceTransport"),
    .target(name: "GRPCHealth", dependencies: ["GRPC", "Protobuf"], path: "Shared/IO/GRPCHealth"),
    .target(
        name: "NameResolution", dependencies: ["Configuration", "GRPC", "NetworkIO"], path: "Shared/IO/NameResolution"),
    .testTarget(
        name: "NameResolutionTests",
        dependencies: ["NameResolution", "Configuration", "GRPC", "GRPCEchoMessages", "NetworkIO"],
        path: "Tests/NameResolutionTests"),
    .target(name: "GRPCEchoMessages", dependencies: ["GRPC", "Protobuf"], path: "Tests/Support/GRPCEchoMessages"),
    .executableTarget(
        name: "grpc-echo-server",
        dependencies: ["GRPC", "GRPCHealth", "GRPCEchoMessages", "NetworkIO", "Observability", "TLSChannels"],
        path: "Tests/Support/GRPCEchoServer"),
    .executableTarget(
        name: "grpc-echo-client", dependencies: ["GRPC", "GRPCEchoMessages", "NetworkIO", "TLSChannels"],
        path: "Tests/Support/GRPCEchoClient"),
    .testTarget(name: "NetworkIOTests", dependencies: ["NetworkIO"], path: "Tests/NetworkIOTests"),
    .testTarget(name: "HTTP2Tests", dependencies: ["HTTP2"], path: "Tests/HTTP2Tests"),
    .testTarget(name: "ProtobufTests", dependencies: ["Protobuf"], path: "Tests/ProtobufTests"),
    .testTarget(
        name: "GRPCTests", dependencies: ["GRPC", "GRPCHealth", "GRPCEchoMessages", "NetworkIO", "TLSChannels"],
        path: "Tests/GRPCTests"),
]

// MARK: - Services and gateway

let serviceTargets: [Target] = [
    .target(
        name: "ServiceRuntime",
        dependencies: [
            "BuildInfo", "Configuration", "Domain", "GRPC", "GRPCHealth", "HTTPMessages", "HTTPServer",
            "NameResolution",
            "NetworkIO", "Observability", "PostgresStorage", "Protobuf", "RuntimeMetrics",
            "ServiceContracts", "ServiceIdentity", "ServiceTransport", "TraceExport", "AccessTokens", "SessionIssuance",
            "Crypto",
        ],
        path: "Shared/Composition/ServiceRuntime"),
    .testTarget(
        name: "ServiceRuntimeTests", dependencies: ["ServiceRuntime", "Observability"],
        path: "Tests/ServiceRuntimeTests"),
    .target(
        name: "ChallengeServiceCore",
        dependencies: [
            "Configuration", "Crypto", "Domain", "GRPC", "Observability", "ServiceContracts", "ServiceIdentity",
        ],
        path: "Services/ChallengeService/Core"),
    .executableTarget(
        name: "challenge-service",
        dependencies: ["ChallengeServiceCore", "Crypto", "PostgresStorage", "ServiceContracts", "ServiceRuntime"],
        path: "Services/ChallengeService/Main"),
    .target(
        name: "VerificationServiceCore",
        dependencies: [
            "AccessTokens", "AccountRecovery", "Configuration", "Crypto", "Domain", "Encoding", "GRPC", "Observability",
            "PasskeyProviders", "ServiceContracts", "ServiceIdentity", "SessionIssuance", "WebAuthn",
        ],
        path: "Services/VerificationService/Core"),
    .target(
        name: "InMemoryStorage",
        dependencies: ["AdminAccess", "Crypto", "Domain", "Encoding", "IPAddresses", "Observability", "Webhooks"],
        path: "Tests/Support/InMemoryStorage"),
    .testTarget(
        name: "VerificationServiceCoreTests",
        dependencies: [
            "Crypto", "Domain", "Encoding", "InMemoryStorage", "Observability", "PasskeyProviders", "SessionIssuance",
            "SoftwareAuthenticator", "VerificationServiceCore", "WebAuthn",
        ],
        path: "Tests/VerificationServiceCoreTests"),
    .target(
        name: "UseCaseTestSupport", dependencies: ["Crypto", "Domain"], path: "Tests/Support/UseCaseTestSupport"),
    .testTarget(
        name: "InMemoryStorageTests",
        dependencies: ["Crypto", "Domain", "InMemoryStorage", "UseCaseTestSupport", "Webhooks"],
        path: "Tests/InMemoryStorageTests"),
    .testTarget(
        name: "ChallengeServiceCoreTests",
        dependencies: [
            "ChallengeServiceCore", "Crypto", "Domain", "InMemoryStorage", "Observability", "UseCaseTestSupport",
        ],
        path: "Tests/ChallengeServiceCoreTests"),
    .testTarget(
        name: "SessionServiceCoreTests",
        dependencies: [
            "AccountRecovery", "AdminAccess", "Crypto", "Domain", "Encoding", "InMemoryStorage", "Observability",
            "PasswordHashing", "SessionIssuance", "SessionServiceCore", "UseCaseTestSupport", "Webhooks",
        ],
        path: "Tests/SessionServiceCoreTests"),
    .executableTarget(
        name: "verification-service",
        dependencies: [
            "Configuration", "Crypto", "PasskeyPolicy", "PasskeyProviders", "PostgresStorage", "ServiceContracts",
            "ServiceRuntime", "SessionIssuance", "VerificationServiceCore", "WebAuthn",
        ],
        path: "Services/VerificationService/Main"),
    .target(
        name: "SessionServiceCore",
        dependencies: [
            "AccessTokens", "AccountRecovery", "AdminAccess", "Configuration", "Crypto", "Domain", "Encoding", "GRPC",
            "JSON", "Observability", "PasswordHashing", "ServiceContracts", "ServiceIdentity", "SessionIssuance",
            "Webhooks",
        ],
        path: "Services/SessionService/Core",
        resources: [.copy("Resources")]),
    .executableTarget(
        name: "session-service",
        dependencies: [
            "AccountRecovery", "Configuration", "Crypto", "CurlTransport", "Domain", "IPAddresses", "Observability",
            "PasswordHashing", "PostgresStorage", "ServiceContracts", "ServiceRuntime", "SessionIssuance",
            "SessionServiceCore",
            "WebhookDelivery", "Webhooks",
        ],
        path: "Services/SessionService/Main"),
    .target(name: "JSON", path: "Shared/Foundations/JSON", swiftSettings: hotPathSettings),
    .target(name: "Encoding", path: "Shared/Foundations/Encoding", swiftSettings: hotPathSettings),
    .testTarget(name: "JSONTests", dependencies: ["JSON", "Encoding"], path: "Tests/JSONTests"),
    .target(
        name: "HTTPServer", dependencies: ["HTTP1", "HTTP2", "HTTPMessages", "NetworkIO", "TLSChannels"],
        path: "Shared/IO/HTTPServer", swiftSettings: hotPathSettings),
    .target(
        name: "GatewayCore",
        dependencies: [
            "AccessTokens", "AccountRecovery", "AdminAccess", "BuildInfo", "Configuration", "Crypto", "Domain",
            "Encoding",
            "GRPC", "GRPCHealth",
            "HTTPMessages", "HTTPServer", "IPAddresses", "JSON", "NameResolution", "NetworkIO", "Observability",
            "PasskeyPolicy",
            "PasskeyProviders", "Protobuf", "RateLimiting", "RuntimeMetrics", "ServiceContracts", "ServiceTransport",
            "TraceExport", "WebAuthn",
        ],
        path: "Services/Gateway/Core",
        resources: [
            .copy("Web"), .copy("openapi.json"), .copy("openapi-admin.json"), .copy("admin-page.html"),
        ]),
    .executableTarget(
        name: "gateway", dependencies: ["BuildInfo", "GatewayCore", "Configuration", "Observability"],
        path: "Services/Gateway/Main"),
    .testTarget(
        name: "GatewayTests",
        dependencies: [
            "GatewayCore", "Configuration", "Domain", "Encoding", "GRPC", "GRPCHealth", "HTTPMessages", "HTTPServer",
            "JSON",
            "NetworkIO", "Observability", "PasskeyProviders", "Protobuf", "ServiceContracts", "WebAuthn",
        ],
        path: "Tests/GatewayTests"),
    .target(
        name: "ServiceContracts", dependencies: ["Domain", "Encoding", "GRPC", "Protobuf", "SessionIssuance"],
        path: "Shared/Composition/ServiceContracts"),
    .executableTarget(
        name: "passkey-signin-load", dependencies: ["Encoding", "JSON", "SoftwareAuthenticator", "WebAuthn"],
        path: "Tests/Benchmarks/SignInLoad"),
    .target(name: "TestCertificates", path: "Tests/Support/TestCertificates"),
    .testTarget(
        name: "ServiceTransportTests",
        dependencies: [
            "Configuration", "Crypto", "GRPC", "GRPCEchoMessages", "NetworkIO", "Observability", "ServiceIdentity",
            "ServiceTransport", "TestCertificates", "TLSChannels",
        ],
        path: "Tests/ServiceTransportTests"),
    .testTarget(
        name: "EndToEndTests",
        dependencies: [
            "Crypto", "Encoding", "GRPC", "GRPCHealth", "NetworkIO", "PasskeyClient", "Postgres", "PostgresStorage",
            "PostgresTestSupport", "SoftwareAuthenticator", "TestCertificates", "WebAuthn",
        ],
        path: "Tests/EndToEndTests"),
    .testTarget(
        name: "ServiceContractsTests", dependencies: ["ServiceContracts", "Domain", "GRPC", "Protobuf"],
        path: "Tests/ServiceContractsTests"),
]

// MARK: - The client library apps use: Foundation only, no server module (Clients/PasskeyClient/Package.swift builds
// it on its own for iOS 16+ and macOS 13+); its end-to-end tests run in EndToEndTests against the real stack.
// The session verifier apps' backends use: the access token format and OpenSSL, no server module.

let clientTargets: [Target] = [
    .target(
        name: "PasskeySessionVerifier", dependencies: ["AccessTokens", "Crypto"], path: "Clients/PasskeySessionVerifier"
    ),
    .target(
        name: "AccessTokenSigning", dependencies: ["AccessTokens", "Crypto", "Encoding", "JSON"],
        path: "Tests/Support/AccessTokenSigning"),
    .testTarget(
        name: "PasskeySessionVerifierTests",
        dependencies: [
            "AccessTokens", "AccessTokenSigning", "COpenSSL", "Encoding", "JSON", "PasskeySessionVerifier",
            "StubHTTPServer",
        ],
        path: "Tests/PasskeySessionVerifierTests"),
    .target(name: "StubHTTPServer", path: "Tests/Support/StubHTTPServer"),
    .executableTarget(
        name: "session-verifier-benchmark",
        dependencies: ["AccessTokens", "AccessTokenSigning", "JSON", "PasskeySessionVerifier"],
        path: "Tests/Benchmarks/SessionVerifierBenchmark"),
    .target(name: "PasskeyClient", path: "Clients/PasskeyClient/Sources/PasskeyClient"),
    .testTarget(
        name: "PasskeyClientTests",
        dependencies: [
            "PasskeyClient", "Configuration", "Domain", "GatewayCore", "HTTPMessages", "JSON", "ServiceContracts",
            "StubHTTPServer", "WebAuthn",
        ],
        path: "Tests/PasskeyClientTests"),
]

let allTargets =
    cLibraryTargets + cryptoTargets + persistenceTargets + recoveryTargets + webAuthnTargets + rpcTargets
    + serviceTargets + clientTargets

// MARK: - Layers

/// The product's layers from the bottom up, each a folder: a module's layer is the folder its path is in. A module
/// depends only on modules of its own layer or below, so the domain never reaches I/O and nothing below the services
/// knows them; evaluating this manifest fails when an edge points up or a module is in no layer's folder. Tests, test
/// support and tools (under `Tests/`) may use any layer.
let layers: [(folder: String, name: String)] = [
    ("Shared/System/", "C libraries, one system-library target each"),
    ("Shared/Foundations/", "foundations: codecs, logs and metrics, configuration, limits, threads"),
    (
        "Shared/Domain/",
        "domain and protocol logic, no I/O: accounts and ports, crypto, WebAuthn and its configured policy, sessions, passwords, HTTP/1.1 parsing, service identities, admin tokens, webhook signing and destinations"
    ),
    (
        "Shared/IO/",
        "I/O: event loops, TLS, HTTP/2, gRPC and its transport security, discovery, the HTTP server, Postgres and the repositories, libcurl"
    ),
    ("Shared/Composition/", "the services' contracts and their composition root"),
    (
        "Services/",
        "services: each one's core (use cases and handlers) and executable; the gateway; the operators' tools"
    ),
    ("Clients/", "the app client library (Foundation only) and the backend session verifier (access tokens, OpenSSL)"),
]

/// The index of the layer whose folder holds `path`.
func layerIndex(ofPath path: String) -> Int? {
    layers.firstIndex { path.hasPrefix($0.folder) }
}

func checkLayers(_ targets: [Target]) {
    var layerOf: [String: Int] = [:]
    for target in targets where !(target.path?.hasPrefix("Tests/") ?? false) {
        guard let index = target.path.flatMap(layerIndex(ofPath:)) else {
            fatalError(
                "Package.swift: put \(target.name) in a layer folder (\(layers.map(\.folder).joined(separator: ", ")))")
        }
        layerOf[target.name] = index
    }
    for target in targets {
        guard let layer = layerOf[target.name] else { continue }
        for dependency in target.dependencies {
            guard case .byNameItem(let name, _) = dependency, let below = layerOf[name] else { continue }
            if below > layer {
                fatalError(
                    "Package.swift: \(target.name) (\(layers[layer].name)) depends on \(name) (\(layers[below].name)), a layer above it"
                )
            }
        }
    }
}
checkLayers(allTargets)

// Every Swift target: a member (a method, an extension's property) is visible only where its module is imported,
// so a file that leans on an import it does not declare fails to compile instead of working by accident.
for target in allTargets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("MemberImportVisibility")]
}

let package = Package(
    name: "passkey-server",
    platforms: [.macOS(.v15), .iOS(.v16)],
    products: allTargets.compactMap { target -> Product? in
        // Test support code is not a product.
        if target.path?.hasPrefix("Tests/") == true { return nil }
        switch target.type {
        case .regular: return .library(name: target.name, targets: [target.name])
        case .executable: return .executable(name: target.name, targets: [target.name])
        default: return nil
        }
    },
    targets: allTargets,
    swiftLanguageModes: [.v6]
)
