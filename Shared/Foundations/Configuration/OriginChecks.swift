/// The checks, at start, of the configured origins against the relying party ID and the Android apps: mistakes no
/// request would show, because the platform refuses the ceremony on the device and tells nobody why. The gateway and
/// verification-service, the processes that publish and enforce the origins, run them before they listen.
public enum OriginChecks {
    /// Throws `ConfigurationError` naming the first origin of `PASSKEY_ORIGINS` that cannot work, with the value that
    /// rules it out:
    /// - a web origin whose host is neither the relying party ID nor under it, unless `PASSKEY_RELATED_ORIGINS` lists
    ///   it (a browser runs such a ceremony only when the RP ID's `/.well-known/webauthn` names the origin);
    /// - an `android:apk-key-hash:` origin that no app of `PASSKEY_ANDROID_APPS` accounts for, when any app is
    ///   configured (an app's own origins are allowed without being listed, so a listed one that matches none is a
    ///   certificate missing from its app, or a leftover).
    public static func check(
        relyingPartyID: String, origins: [String], relatedOrigins: [String], androidApps: [AndroidApp]
    ) throws(ConfigurationError) {
        for origin in origins where ConfigurationValues.host(ofWebOrigin: origin) != nil {
            guard !isWithin(origin: origin, relyingPartyID: relyingPartyID), !relatedOrigins.contains(origin) else {
                continue
            }
            throw ConfigurationError(
                variable: "PASSKEY_ORIGINS",
                problem: """
                    \(origin) is neither PASSKEY_RP_ID (\(relyingPartyID)) nor under it, and PASSKEY_RELATED_ORIGINS \
                    does not list it: browsers refuse a ceremony there without a message. Use an origin on \
                    \(relyingPartyID) or a subdomain, or list it in PASSKEY_RELATED_ORIGINS (related origin requests: \
                    the gateway serves it in /.well-known/webauthn, which must answer at \
                    https://\(relyingPartyID)/.well-known/webauthn)
                    """)
        }
        guard !androidApps.isEmpty else { return }
        let accounted = Set(androidApps.flatMap(\.origins))
        for origin in origins where origin.hasPrefix(AndroidApp.originPrefix) && !accounted.contains(origin) {
            let certificate = AndroidApp.fingerprint(origin: origin).map { " (the certificate \($0))" } ?? ""
            let apps = androidApps.map { "\($0.packageName): \($0.sha256Fingerprints.joined(separator: "|"))" }
                .joined(separator: ", ")
            throw ConfigurationError(
                variable: "PASSKEY_ORIGINS",
                problem: """
                    \(origin)\(certificate) belongs to no app of PASSKEY_ANDROID_APPS (\(apps)). Add the \
                    certificate's SHA-256 to its app in PASSKEY_ANDROID_APPS, whose origins are allowed without \
                    being listed here, or remove the origin
                    """)
        }
    }

    /// Every client-data origin verification accepts: `PASSKEY_ORIGINS`, then the related origins, then each
    /// Android app's `android:apk-key-hash:` origins; each once, in that order.
    public static func allowedOrigins(origins: [String], relatedOrigins: [String], androidApps: [AndroidApp])
        -> [String]
    {
        var seen: Set<String> = []
        return (origins + relatedOrigins + androidApps.flatMap(\.origins)).filter { seen.insert($0).inserted }
    }

    /// Whether the origin's host is `relyingPartyID` or a name under it (`login.example.com` for `example.com`).
    public static func isWithin(origin: String, relyingPartyID: String) -> Bool {
        guard let host = ConfigurationValues.host(ofWebOrigin: origin) else { return false }
        return host == relyingPartyID || host.hasSuffix("." + relyingPartyID)
    }
}
