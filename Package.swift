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

let webAuthnTargets: [Target] = [
    .target(name: "WebAuthn", dependencies: ["Crypto"], path: "Shared/WebAuthn"),
    .target(
        name: "SoftwareAuthenticator", dependencies: ["WebAuthn", "Crypto", "COpenSSL"],
        path: "Tests/SoftwareAuthenticator"),
    .testTarget(
        name: "WebAuthnTests", dependencies: ["WebAuthn", "Crypto", "SoftwareAuthenticator"],
        path: "Tests/WebAuthnTests"),
    .executableTarget(
        name: "webauthn-benchmark", dependencies: ["WebAuthn", "Crypto", "SoftwareAuthenticator"],
        path: "Tests/Benchmarks/WebAuthnBenchmark"),
]

// MARK: - RPC: event loop, HTTP/2, protobuf, gRPC, health

let rpcTargets: [Target] = []

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
