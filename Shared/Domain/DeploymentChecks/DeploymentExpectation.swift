import Configuration

/// What a deployment is configured to be, as the gateway reads it: the relying party ID, the origins, the related
/// origins and the apps its well-known files must vouch for. The doctor compares what the deployment serves with
/// this.
public struct DeploymentExpectation: Sendable, Equatable {
    public var relyingPartyID: String
    public var origins: [String]
    public var relatedOrigins: [String]
    public var appleAppIDs: [String]
    public var androidApps: [AndroidApp]
    public var passkeyPages: PasskeyEndpointPages

    public init(
        relyingPartyID: String, origins: [String] = [], relatedOrigins: [String] = [], appleAppIDs: [String] = [],
        androidApps: [AndroidApp] = [], passkeyPages: PasskeyEndpointPages = PasskeyEndpointPages()
    ) {
        self.relyingPartyID = relyingPartyID
        self.origins = origins
        self.relatedOrigins = relatedOrigins
        self.appleAppIDs = appleAppIDs
        self.androidApps = androidApps
        self.passkeyPages = passkeyPages
    }

    /// The expectation of a deployment's configuration (the variables the gateway reads for its well-known files),
    /// read and refused exactly as the gateway reads and refuses them.
    public init(_ env: EnvironmentReader) throws {
        self.init(
            relyingPartyID: try env.relyingPartyID(), origins: try env.origins(),
            relatedOrigins: try env.relatedOrigins(), appleAppIDs: try env.appleAppIDs(),
            androidApps: try env.androidApps(), passkeyPages: try PasskeyEndpointPages(env))
    }
}
