import Configuration
import Foundation
import GRPC
import NameResolution
import NetworkIO
import ServiceContracts
import ServiceRuntime
import VerificationServiceCore
import WebAuthn

await ServiceMain.run(name: "verification-service", listen: \.verificationServiceListen) { server, context in
    let configuration = context.configuration
    let source = ServiceDiscovery.addressSource(
        for: configuration.challengeServiceAddresses,
        interval: .milliseconds(Int64(configuration.serviceDiscoveryInterval * 1000)))
    var clientConfiguration = GRPCClientConfiguration()
    // Reconnecting as the gateway's clients do (BackendCallSettings): a call made while a replica's connection
    // backs off probes it again instead of failing. A new replica's address is often known before it listens (the
    // first attempts fail and back off); when the replica that served every call then drains, the new one must be
    // used by the next call, not after the rest of its backoff.
    clientConfiguration.initialBackoffNanoseconds = 50_000_000
    clientConfiguration.maxBackoffNanoseconds = 1_000_000_000
    clientConfiguration.reconnectOnDemandAfterNanoseconds = 10_000_000
    clientConfiguration.logger = context.logger
    let challengeService = ServiceClient(client: try GRPCClient(source: source, configuration: clientConfiguration))
    let ceremonies = PasskeyCeremonies(
        challenges: RemoteChallengeConsumer(service: challengeService), accounts: context.storage.accounts,
        passkeys: context.storage.passkeyCredentials, relyingPartyID: configuration.relyingPartyID,
        origins: OriginPolicy(allowedOrigins: configuration.origins), logger: context.logger)
    VerificationService(ceremonies: ceremonies).register(on: server, context: context)
}
