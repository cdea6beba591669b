import GRPC
import GRPCEchoMessages
import GRPCHealth
import NetworkIO
import Observability
import TLSChannels

#if canImport(Glibc)
    import Glibc
#endif

// The echo test server: `grpc-echo-server [host:port]` (or GRPC_ECHO_ADDRESS), optional TLS from
// GRPC_ECHO_TLS_CERT / GRPC_ECHO_TLS_KEY and client-certificate verification from GRPC_ECHO_TLS_CA.

let addressText = CommandLine.arguments.dropFirst().first ?? environment("GRPC_ECHO_ADDRESS") ?? "127.0.0.1:50051"
guard let address = SocketAddress(parsing: addressText) else {
    print("invalid address: \(addressText)")
    exit(2)
}
func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

var configuration = GRPCServerConfiguration(address: address)
if let threads = environment("GRPC_ECHO_THREADS").flatMap(Int.init) { configuration.threadCount = threads }
if let drain = environment("GRPC_ECHO_DRAIN_MS").flatMap(UInt64.init) {
    configuration.drainTimeoutNanoseconds = drain * 1_000_000
}
// Logged to standard output, where the interop tests read the bound address.
configuration.logger = Logger(service: "grpc-echo-server", sink: FileDescriptorSink(1))
if let certificate = environment("GRPC_ECHO_TLS_CERT"), let key = environment("GRPC_ECHO_TLS_KEY") {
    do {
        configuration.tls = try ChannelTLS.serverSecurity(
            certificateChainPath: certificate, privateKeyPath: key, clientCAPath: environment("GRPC_ECHO_TLS_CA"))
    } catch {
        print("TLS setup failed: \(error)")
        exit(2)
    }
}
let server = GRPCServer(configuration: configuration)
let health = HealthService()
health.register(on: server)
EchoService.register(on: server)
do {
    try server.run()
} catch {
    print("server failed: \(error)")
    exit(1)
}
exit(0)
