import JSON

/// The client extension outputs the verifier understands, read from `clientExtensionResults` JSON.
public struct ClientExtensionOutputs: Sendable, Equatable {
    /// credProps.rk: whether the client created a discoverable credential (nil when not reported).
    public var residentKey: Bool?

    /// Outputs with the given values.
    public init(residentKey: Bool? = nil) {
        self.residentKey = residentKey
    }

    /// Parses the JSON object `clientExtensionResults` (empty input means none). Unknown extensions are ignored.
    public init(json bytes: [UInt8]) throws(WebAuthnError) {
        guard !bytes.isEmpty else {
            self.init()
            return
        }
        let document: JSONValue
        do {
            document = try JSONReader.parse(bytes)
        } catch {
            throw WebAuthnError(.malformedClientData, "clientExtensionResults is not valid JSON")
        }
        switch document {
        case .null:
            self.init()
        case .object:
            var residentKey: Bool?
            if let credProps = document["credProps"] {
                guard case .object = credProps else {
                    throw WebAuthnError(.malformedClientData, "credProps is not an object")
                }
                if let rk = credProps["rk"] {
                    guard let flag = rk.boolValue else {
                        throw WebAuthnError(.malformedClientData, "credProps.rk is not a boolean")
                    }
                    residentKey = flag
                }
            }
            self.init(residentKey: residentKey)
        default:
            throw WebAuthnError(.malformedClientData, "clientExtensionResults is not an object")
        }
    }
}
