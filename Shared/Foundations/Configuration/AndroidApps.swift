import Encoding

/// An Android app allowed to use the relying party's passkeys: its package name and the SHA-256 fingerprints of the
/// certificates it is signed with (the upload key, Play's app signing key, a debug key). From this one value the
/// gateway writes its `assetlinks.json` statements and verification-service allows its
/// `android:apk-key-hash:` origins, so nobody converts one form into the other by hand.
public struct AndroidApp: Sendable, Equatable {
    /// The application ID, `com.example.app`.
    public var packageName: String
    /// The signing certificates' SHA-256 as `keytool` and Play Console print them: 32 colon-separated uppercase hex
    /// bytes. In the order configured, none twice, at least one.
    public var sha256Fingerprints: [String]

    /// An app with these fingerprints, which must already be in the colon form.
    public init(packageName: String, sha256Fingerprints: [String]) {
        self.packageName = packageName
        self.sha256Fingerprints = sha256Fingerprints
    }

    /// The origins Credential Manager puts in this app's client data, one per certificate:
    /// `android:apk-key-hash:` and the unpadded base64url of the certificate's SHA-256.
    public var origins: [String] { sha256Fingerprints.compactMap(Self.origin(fingerprint:)) }

    /// The `android:apk-key-hash:` origin of a colon-hex SHA-256 fingerprint; nil when it is not one.
    public static func origin(fingerprint: String) -> String? {
        digest(fingerprint: fingerprint).map { originPrefix + Base64URL.encode($0) }
    }

    /// The colon-hex fingerprint an `android:apk-key-hash:` origin stands for; nil when it is not such an origin of
    /// 32 bytes.
    public static func fingerprint(origin: String) -> String? {
        guard origin.hasPrefix(originPrefix),
            let digest = Base64URL.decodeUnpadded(origin.dropFirst(originPrefix.count)), digest.count == 32
        else { return nil }
        return colonHex(digest)
    }

    /// `android:apk-key-hash:`.
    public static let originPrefix = "android:apk-key-hash:"

    /// The most fingerprints one app may list, and the most apps.
    public static let fingerprintLimit = 16
    public static let appLimit = 100

    static let fingerprintForm =
        "the signing certificate's SHA-256 as 32 colon-separated hex bytes, as keytool -list -v and Play Console print it (14:6D:E9:…:A7, 95 characters)"
    static let packageForm =
        "a package name like com.example.app (two or more parts separated by dots, each starting with a letter, then letters, digits or _)"

    /// The 32 bytes of a colon-hex fingerprint (either case); nil for anything else.
    static func digest(fingerprint: String) -> [UInt8]? {
        let parts = fingerprint.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 32 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard part.utf8.count == 2, part.allSatisfy(\.isHexDigit), let byte = UInt8(part, radix: 16) else {
                return nil
            }
            bytes.append(byte)
        }
        return bytes
    }

    static func colonHex(_ bytes: [UInt8]) -> String {
        bytes.map { byte in
            let digits = String(byte, radix: 16, uppercase: true)
            return digits.count == 1 ? "0" + digits : digits
        }.joined(separator: ":")
    }

    /// Android's rule for an application ID: at least two dot-separated parts, each a letter followed by letters,
    /// digits or underscores.
    static func isPackageName(_ name: String) -> Bool {
        guard name.utf8.count <= 255 else { return false }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count >= 2
            && parts.allSatisfy { part in
                guard let first = part.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else {
                    return false
                }
                return part.unicodeScalars.allSatisfy {
                    $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_")
                }
            }
    }
}

extension EnvironmentReader {
    /// `PASSKEY_ANDROID_APPS`: a comma-separated list of `package:FINGERPRINT`, where FINGERPRINT is one signing
    /// certificate's SHA-256 in colon hex, or several joined by `|` (`com.example.app:AB:…:01|CD:…:02`). A package
    /// listed in several entries gets the fingerprints of all of them, so the form of one certificate per entry keeps
    /// working. Fingerprints are uppercased; one listed twice for a package counts once.
    public func androidApps() throws -> [AndroidApp] {
        let variable = "PASSKEY_ANDROID_APPS"
        var apps: [AndroidApp] = []
        for entry in list("PASSKEY_ANDROID_APPS") {
            guard let colon = entry.firstIndex(of: ":") else {
                throw ConfigurationError(
                    variable: variable,
                    problem:
                        "expected package:FINGERPRINT[|FINGERPRINT...], with \(AndroidApp.packageForm) and \(AndroidApp.fingerprintForm), got \(entry.prefix(120))"
                )
            }
            let package = String(entry[..<colon]).trimmingWhitespace()
            guard AndroidApp.isPackageName(package) else {
                throw ConfigurationError(
                    variable: variable, problem: "expected \(AndroidApp.packageForm), got \(package.prefix(120))")
            }
            let listed = entry[entry.index(after: colon)...].split(separator: "|", omittingEmptySubsequences: false)
            var fingerprints: [String] = []
            for text in listed.map({ String($0).trimmingWhitespace() }) {
                guard let digest = AndroidApp.digest(fingerprint: text) else {
                    throw ConfigurationError(
                        variable: variable,
                        problem:
                            "\(package): expected \(AndroidApp.fingerprintForm), got \(text.isEmpty ? "nothing" : String(text.prefix(120)))"
                    )
                }
                fingerprints.append(AndroidApp.colonHex(digest))
            }
            if let index = apps.firstIndex(where: { $0.packageName == package }) {
                apps[index].sha256Fingerprints += fingerprints
            } else {
                apps.append(AndroidApp(packageName: package, sha256Fingerprints: fingerprints))
            }
        }
        for index in apps.indices {
            var seen: Set<String> = []
            apps[index].sha256Fingerprints = apps[index].sha256Fingerprints.filter { seen.insert($0).inserted }
            guard apps[index].sha256Fingerprints.count <= AndroidApp.fingerprintLimit else {
                throw ConfigurationError(
                    variable: variable,
                    problem:
                        "\(apps[index].packageName): at most \(AndroidApp.fingerprintLimit) fingerprints, got \(apps[index].sha256Fingerprints.count)"
                )
            }
        }
        guard apps.count <= AndroidApp.appLimit else {
            throw ConfigurationError(
                variable: variable, problem: "at most \(AndroidApp.appLimit) apps, got \(apps.count)")
        }
        return apps
    }
}
