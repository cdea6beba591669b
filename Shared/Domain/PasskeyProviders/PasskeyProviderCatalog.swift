import Encoding
import Foundation
import JSON

/// A passkey provider as the community AAGUID list names it: what account pages show beside a passkey.
public struct PasskeyProvider: Sendable, Equatable {
    /// The provider's name, e.g. "Google Password Manager"; a valid passkey name (1 to 128 characters, no control
    /// characters, no surrounding whitespace).
    public let name: String
    /// The icon for light backgrounds, if the list has one.
    public let lightIcon: ProviderIcon?
    /// The icon for dark backgrounds, if the list has one.
    public let darkIcon: ProviderIcon?

    /// The icon for `variant`.
    public func icon(_ variant: ProviderIcon.Variant) -> ProviderIcon? {
        variant == .light ? lightIcon : darkIcon
    }
}

/// One icon, decoded from its `data:` URI.
public struct ProviderIcon: Sendable, Equatable {
    /// Which background an icon is drawn for.
    public enum Variant: String, Sendable, CaseIterable {
        case light, dark
    }

    /// The media types an icon may have; anything else in the list is refused.
    public static let mediaTypes: Set<String> = ["image/svg+xml", "image/png", "image/webp"]
    /// The largest decoded icon accepted, in bytes.
    public static let maximumBytes = 64 * 1024

    /// The media type, one of ``mediaTypes``.
    public let mediaType: String
    /// The decoded image.
    public let bytes: [UInt8]

    /// The icon in a `data:<type>;base64,<data>` URI; nil for any other form, an unlisted type, bad base64, or an
    /// image over ``maximumBytes``.
    public init?(dataURI: String) {
        let prefix = "data:"
        let marker = ";base64,"
        guard dataURI.hasPrefix(prefix), let markerRange = dataURI.range(of: marker) else { return nil }
        let type = String(dataURI[dataURI.index(dataURI.startIndex, offsetBy: prefix.count)..<markerRange.lowerBound])
        guard Self.mediaTypes.contains(type) else { return nil }
        let encoded = dataURI[markerRange.upperBound...]
        // base64 grows by 4/3; refuse before decoding anything larger than the limit allows.
        guard encoded.utf8.count <= (Self.maximumBytes + 2) / 3 * 4,
            !encoded.contains("-"), !encoded.contains("_"),
            let bytes = Base64URL.decode(encoded), !bytes.isEmpty, bytes.count <= Self.maximumBytes
        else { return nil }
        mediaType = type
        self.bytes = bytes
    }
}

/// The community list of passkey-provider AAGUIDs (`Data/passkey-authenticator-aaguids.json`, see `Data/SOURCE.md`),
/// read once: AAGUID → provider name and icons. A pure lookup: it proves nothing about an authenticator (that is
/// attestation's and the metadata service's job) and is only for naming passkeys.
public struct PasskeyProviderCatalog: Sendable {
    /// Why the list was refused.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// The largest file read, in bytes.
    public static let maximumFileBytes = 4 * 1024 * 1024
    /// The most entries accepted.
    public static let maximumEntries = 2_000
    /// The longest provider name accepted, in Unicode scalars (a passkey name's limit).
    public static let maximumNameLength = 128

    private let providers: [UUID: PasskeyProvider]

    /// The number of providers listed.
    public var count: Int { providers.count }

    /// The AAGUIDs listed.
    public var aaguids: [UUID] { Array(providers.keys) }

    /// A catalog that names no provider.
    public static let empty = PasskeyProviderCatalog(providers: [:])

    private init(providers: [UUID: PasskeyProvider]) { self.providers = providers }

    /// The list shipped with this module, read on first use. A `Failure` when the file is missing or malformed: an
    /// installation without it is broken, and the executables refuse to start (see ``loadShipped()``).
    public static let shipped: Result<PasskeyProviderCatalog, Failure> = loadShippedResult()

    private static func loadShippedResult() -> Result<PasskeyProviderCatalog, Failure> {
        do throws(Failure) { return .success(try loadShipped()) } catch { return .failure(error) }
    }

    /// Reads the shipped list from the module's resources.
    public static func loadShipped() throws(Failure) -> PasskeyProviderCatalog {
        guard
            let url = Bundle.module.url(
                forResource: "passkey-authenticator-aaguids", withExtension: "json", subdirectory: "Data")
        else { throw Failure(description: "the passkey provider list passkey-authenticator-aaguids.json is missing") }
        let data: Data
        do {
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            data = try handle.read(upToCount: maximumFileBytes + 1) ?? Data()
        } catch {
            throw Failure(description: "the passkey provider list could not be read: \(error)")
        }
        return try PasskeyProviderCatalog(json: Array(data))
    }

    /// Parses a list in the community format. An empty object is an empty catalog (the list's way of being
    /// retired), not an error. Refuses a document over ``maximumFileBytes`` or ``maximumEntries``, a key that is not
    /// a lowercase canonical UUID, a missing or invalid `name`, an icon that is not a base64 `data:` URI of an
    /// accepted image type, and unknown members (a changed format is noticed, not half-read).
    public init(json bytes: [UInt8]) throws(Failure) {
        guard bytes.count <= Self.maximumFileBytes else {
            throw Failure(description: "the passkey provider list is over \(Self.maximumFileBytes) bytes")
        }
        let document: JSONValue
        do { document = try JSONReader.parse(bytes) } catch {
            throw Failure(description: "the passkey provider list is not valid JSON (byte \(error.offset))")
        }
        guard let entries = document.objectValue else {
            throw Failure(description: "the passkey provider list must be a JSON object")
        }
        guard entries.count <= Self.maximumEntries else {
            throw Failure(description: "the passkey provider list has more than \(Self.maximumEntries) entries")
        }
        var providers: [UUID: PasskeyProvider] = [:]
        for (key, value) in entries {
            guard key.utf8.count == 36, key == key.lowercased(), let aaguid = UUID(text: key) else {
                throw Failure(
                    description: "the passkey provider list has a key that is not a lowercase AAGUID: \(key.prefix(40))"
                )
            }
            guard let entry = value.objectValue else {
                throw Failure(description: "the passkey provider entry \(key) must be an object")
            }
            if let unknown = entry.keys.first(where: { !["name", "icon_light", "icon_dark"].contains($0) }) {
                throw Failure(
                    description: "the passkey provider entry \(key) has an unknown member \(unknown.prefix(40))")
            }
            guard let name = entry["name"]?.stringValue, Self.isValidName(name) else {
                throw Failure(
                    description:
                        "the passkey provider entry \(key) needs a name of 1 to \(Self.maximumNameLength) characters")
            }
            func icon(_ member: String) throws(Failure) -> ProviderIcon? {
                guard let value = entry[member] else { return nil }
                guard let uri = value.stringValue, let icon = ProviderIcon(dataURI: uri) else {
                    throw Failure(description: "the passkey provider entry \(key) has an invalid \(member)")
                }
                return icon
            }
            providers[aaguid] = PasskeyProvider(
                name: name, lightIcon: try icon("icon_light"), darkIcon: try icon("icon_dark"))
        }
        self.providers = providers
    }

    /// The provider whose passkeys carry `aaguid`; nil for an unlisted one (and for the all-zero AAGUID of
    /// authenticators that send none).
    public func provider(for aaguid: UUID) -> PasskeyProvider? {
        providers[aaguid]
    }

    /// As ``provider(for:)-(UUID)`` for the text form of an AAGUID; nil for text that is not one.
    public func provider(forText aaguid: String) -> PasskeyProvider? {
        guard aaguid.utf8.count == 36, let uuid = UUID(text: aaguid) else { return nil }
        return providers[uuid]
    }

    /// A name the catalog can give a passkey as it is: trimmed, 1 to 128 scalars, no control characters.
    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name == name.trimmingWhitespace() && name.unicodeScalars.count <= maximumNameLength
            && !name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}
