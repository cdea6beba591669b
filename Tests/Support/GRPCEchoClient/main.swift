import GRPC
import GRPCEchoMessages
import NetworkIO
import TLSChannels

#if canImport(Glibc)
    import Glibc
#endif

// The echo test client, for calling other gRPC servers from interop tests:
//   grpc-echo-client ADDRESS[,ADDRESS...] get TEXT
//   grpc-echo-client ADDRESS fail CODE MESSAGE
//   grpc-echo-client ADDRESS slow DELAY_MS DEADLINE_MS
//   grpc-echo-client ADDRESS many COUNT
// Prints `status=N message=... text=...` and exits 0 when the call went as far as a status.

func output(_ line: String) {
    print(line)
    fflush(nil)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2 else {
    output("usage: grpc-echo-client ADDRESS[,ADDRESS...] get|fail|slow|many ...")
    exit(2)
}
let addresses = arguments[0].split(separator: ",").compactMap { SocketAddress(parsing: String($0)) }
func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

// TLS from GRPC_ECHO_TLS_CA (trusted CA) and, for mTLS, GRPC_ECHO_TLS_CERT / GRPC_ECHO_TLS_KEY.
var configuration = GRPCClientConfiguration()
if let trustedCA = environment("GRPC_ECHO_TLS_CA") {
    configuration.tls = try ChannelTLS.clientSecurity(
        trustedCAPath: trustedCA, certificateChainPath: environment("GRPC_ECHO_TLS_CERT"),
        privateKeyPath: environment("GRPC_ECHO_TLS_KEY"))
}
let client = try GRPCClient(addresses: addresses, configuration: configuration)
var request = EchoRequest()
var deadline = Duration.seconds(10)
var repetitions = 1
switch arguments[1] {
case "get":
    request.text = arguments.count > 2 ? arguments[2] : ""
case "fail":
    request.statusCode = Int32(arguments.count > 2 ? arguments[2] : "2") ?? 2
    request.statusMessage = arguments.count > 3 ? arguments[3] : ""
case "slow":
    request.delayMilliseconds = UInt32(arguments.count > 2 ? arguments[2] : "1000") ?? 1000
    deadline = .milliseconds(Int(arguments.count > 3 ? arguments[3] : "100") ?? 100)
case "many":
    request.text = "many"
    repetitions = Int(arguments.count > 2 ? arguments[2] : "100") ?? 100
default:
    output("unknown command \(arguments[1])")
    exit(2)
}
var metadata = Metadata()
metadata.add("x-echo", "from-swift")
metadata.add("x-echo-bin", bytes: [0, 1, 2, 255])
let finalRequest = request
let finalDeadline = deadline
let finalMetadata = metadata
let results = await withTaskGroup(of: String.self) { group in
    for _ in 0..<repetitions {
        group.addTask {
            do {
                let response = try await client.unary(
                    EchoService.get, request: finalRequest,
                    deadline: finalDeadline, metadata: finalMetadata)
                let binary = response.echoedBinaryMetadata.map { String($0) }.joined(separator: ".")
                return "status=0 text=\(response.text) metadata=\(response.echoedMetadata) binary=\(binary)"
            } catch let error as RPCError {
                return "status=\(error.code.rawValue) message=\(error.message)"
            } catch {
                return "status=2 message=\(error)"
            }
        }
    }
    var lines: [String] = []
    for await line in group { lines.append(line) }
    return lines
}
if repetitions == 1 {
    output(results[0])
} else {
    let succeeded = results.filter { $0.hasPrefix("status=0") }.count
    output("succeeded=\(succeeded) total=\(results.count)")
}
client.close()
exit(0)
