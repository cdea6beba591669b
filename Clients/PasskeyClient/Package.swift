// swift-tools-version:6.0
import PackageDescription

// The client library on its own, for apps: Foundation only, so it builds for iOS 16+ and macOS 13+ without the
// server's modules (the repository's root package, which also builds it, needs macOS 15 for its server targets).
// Its tests run from the root package (Tests/PasskeyClientTests, and Tests/EndToEndTests against the real stack).
let package = Package(
    name: "passkey-client",
    platforms: [.iOS(.v16), .macOS(.v13), .visionOS(.v1), .tvOS(.v16), .watchOS(.v9)],
    products: [.library(name: "PasskeyClient", targets: ["PasskeyClient"])],
    targets: [.target(name: "PasskeyClient", path: "Sources/PasskeyClient")],
    swiftLanguageModes: [.v6]
)
