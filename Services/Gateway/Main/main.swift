import BuildInfo
import Configuration
import Foundation
import GatewayCore
import Observability

// The gateway's composition root: configuration from the environment, dependencies built once, run until
// SIGTERM or SIGINT, drain, exit. `--version` is answered before anything is read.
BuildInfo.answerVersionRequest(program: "gateway")
let logger = Logger(service: "gateway")
do {
    let configuration = try GatewayConfiguration(environment: ProcessInfo.processInfo.environment)
    let gateway = try Gateway(configuration: configuration, logger: logger)
    try gateway.run()
} catch let error as ConfigurationError {
    logger.error("gateway.configuration_invalid", ["variable": error.variable, "problem": error.problem])
    FileHandle.standardError.write(Data("gateway: invalid configuration: \(error)\n".utf8))
    exit(2)
} catch {
    logger.error("gateway.start_failed", ["error": String(describing: error)])
    exit(1)
}
