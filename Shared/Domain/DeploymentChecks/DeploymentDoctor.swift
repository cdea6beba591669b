/// A deployment checked from the outside, as devices see it: the relying party ID against the host and the
/// origins, the TLS certificate, and each well-known file against the configuration. Pure: the caller fetches
/// (``WellKnownFile/path`` on `https://host:port`) and passes the clock.
public enum DeploymentDoctor {
    /// The findings for a deployment served at `host:port`, in a fixed order: the relying party, TLS, then the
    /// files in ``WellKnownFile`` order. A file missing from `documents` counts as unreachable.
    public static func findings(
        host: String, port: Int, expectation: DeploymentExpectation, certificate: ServedCertificate,
        documents: [WellKnownFile: FetchedDocument], now: Int64
    ) -> [DeploymentFinding] {
        func fetched(_ file: WellKnownFile) -> FetchedDocument { documents[file] ?? .failed("not fetched") }
        var connectionFailure: String?
        for file in WellKnownFile.allCases {
            guard case .failed(let reason) = fetched(file) else {
                connectionFailure = nil
                break
            }
            connectionFailure = connectionFailure ?? reason
        }
        return RelyingPartyCheck.findings(host: host, port: port, expectation: expectation)
            + CertificateCheck.findings(certificate, host: host, connectionFailure: connectionFailure, now: now)
            + AppleAppSiteAssociationCheck.findings(fetched(.appleAppSiteAssociation), appIDs: expectation.appleAppIDs)
            + AssetLinksCheck.findings(fetched(.assetLinks), apps: expectation.androidApps)
            + RelatedOriginsCheck.findings(fetched(.relatedOrigins), expectation: expectation)
            + PasskeyEndpointsCheck.findings(fetched(.passkeyEndpoints), expectation: expectation)
    }
}
