/// The checks, at start, of the configured origins against the Android apps: mistakes no request would show, because
/// the platform refuses the ceremony on the device and tells nobody why. The gateway and verification-service, the
/// processes that publish and enforce the origins, run them before they listen.
public enum OriginChecks {
    /// Throws `ConfigurationError` naming the first origin of `PASSKEY_ORIGINS` that cannot work, with the value that
    /// rules it out: an `android:apk-key-hash:` origin that no app of `PASSKEY_ANDROID_APPS` accounts for, when any
    /// app is configured (an app's own origins are allowed without being listed, so a listed one that matches none is
    /// a certificate missing from its app, or a leftover).
    public static func check(origins: [String], androidApps: [AndroidApp]) throws(ConfigurationError) {
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

    /// Every client-data origin verification accepts: `PASSKEY_ORIGINS`, then each Android app's
    /// `android:apk-key-hash:` origins; each once, in that order.
    public static func allowedOrigins(origins: [String], androidApps: [AndroidApp]) -> [String] {
        var seen: Set<String> = []
        return (origins + androidApps.flatMap(\.origins)).filter { seen.insert($0).inserted }
    }
}
