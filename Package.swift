// swift-tools-version:6.0
import PackageDescription

// MARK: - C libraries: one system-library target each, with its pkg-config name and apt provider.

let cLibraryTargets: [Target] = [
    .systemLibrary(name: "COpenSSL", path: "Shared/COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
    .systemLibrary(name: "CLibPQ", path: "Shared/CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
    .systemLibrary(
        name: "CNGHTTP2", path: "Shared/CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
    .systemLibrary(name: "CArgon2", path: "Shared/CArgon2", pkgConfig: "libargon2", providers: [.apt(["libargon2-dev"])]),
]

// MARK: - Crypto on OpenSSL (digests, random, keys, signatures, X.509, TLS)

let cryptoTargets: [Target] = [
    .target(name: "Crypto", dependencies: ["COpenSSL"], path: "Shared/Crypto"),
    .testTarget(name: "CryptoTests", dependencies: ["Crypto"], path: "Tests/CryptoTests"),
]

// MARK: - Domain and persistence

let persistenceTargets: [Target] = []

// MARK: - WebAuthn verification core and crypto

let webAuthnTargets: [Target] = []

// MARK: - RPC: event loop, HTTP/2, protobuf, gRPC, health

let rpcTargets: [Target] = [
    .target(name: "CNetworkIO", path: "Shared/CNetworkIO"),
    // NetworkIO, HTTP2 and GRPC keep their mutable state confined to one event-loop thread. In release builds
    // they skip the runtime exclusivity checks, which profiling showed at about 14% of the instructions per
    // request (some 80 dynamic checks per call); debug builds and every test still run with the checks.
    .target(
        name: "NetworkIO", dependencies: ["CNetworkIO"], path: "Shared/NetworkIO",
        swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]),
    .target(
        name: "HTTP2", dependencies: ["NetworkIO", "CNGHTTP2"], path: "Shared/HTTP2",
        swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]),
    .target(name: "Protobuf", path: "Shared/Protobuf"),
    .target(
        name: "GRPC", dependencies: ["NetworkIO", "HTTP2", "Protobuf", "Crypto"], path: "Shared/GRPC",
        swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]),
    .target(name: "GRPCHealth", dependencies: ["GRPC", "Protobuf"], path: "Shared/GRPCHealth"),
    .target(name: "GRPCEchoMessages", dependencies: ["GRPC", "Protobuf"], path: "Tests/Support/GRPCEchoMessages"),
    .executableTarget(
        name: "grpc-echo-server", dependencies: ["GRPC", "GRPCHealth", "GRPCEchoMessages"],
        path: "Tests/Support/GRPCEchoServer"),
    .executableTarget(
        name: "grpc-echo-client", dependencies: ["GRPC", "GRPCEchoMessages"], path: "Tests/Support/GRPCEchoClient"),
    .testTarget(name: "NetworkIOTests", dependencies: ["NetworkIO"], path: "Tests/NetworkIOTests"),
    .testTarget(name: "HTTP2Tests", dependencies: ["HTTP2"], path: "Tests/HTTP2Tests"),
    .testTarget(name: "ProtobufTests", dependencies: ["Protobuf"], path: "Tests/ProtobufTests"),
    .testTarget(
        name: "GRPCTests", dependencies: ["GRPC", "GRPCHealth", "GRPCEchoMessages", "NetworkIO"],
        path: "Tests/GRPCTests"),
]

// MARK: - Services and gateway

let serviceTargets: [Target] = []

let allTargets = cLibraryTargets + cryptoTargets + persistenceTargets + webAuthnTargets + rpcTargets + serviceTargets

let package = Package(
    name: "passkey-server",
    platforms: [.macOS(.v15)],
    products: allTargets.compactMap { target -> Product? in
        switch target.type {
        case .regular: return .library(name: target.name, targets: [target.name])
        case .executable: return .executable(name: target.name, targets: [target.name])
        default: return nil
        }
    },
    targets: allTargets,
    swiftLanguageModes: [.v6]
)
