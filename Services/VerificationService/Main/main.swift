import Configuration
import Foundation
import GRPC
import NetworkIO
import ServiceContracts
import ServiceRuntime
import VerificationServiceCore
import WebAuthn

await ServiceMain.run(name: "verification-service", listen: \.verificationServiceListen) { server, context in
    let configuration = context.configuration
    let addresses = try configuration.challengeServiceAddresses.map {
        try AddressResolution.resolve($0, variable: "CHALLENGE_SERVICE_ADDRESSES")
    }
    var clientConfiguration = GRPCClientConfiguration()
    clientConfiguration.maxBackoffNanoseconds = 1_000_000_000
    let challengeService = ServiceClient(client: try GRPCClient(addresses: addresses, configuration: clientConfiguration))
    let ceremonies = PasskeyCeremonies(
        challenges: RemoteChallengeConsumer(service: challengeService), accounts: context.storage.accounts,
        passkeys: context.storage.passkeyCredentials, relyingPartyID: configuration.relyingPartyID,
        origins: OriginPolicy(allowedOrigins: configuration.origins), logger: context.logger)
    VerificationService(ceremonies: ceremonies).register(on: server, context: context)
}
