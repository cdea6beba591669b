import Foundation

/// The JSON conventions of the gateway: binary values are base64url without padding, times are RFC 3339 (whole
/// seconds or with a fraction). A value that breaks them fails decoding at its own coding path, so the error names
/// the field.
enum JSONCoding {
    /// A decoder for response bodies. A new one per body: decoders are cheap, and not every platform's is Sendable.
    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dataDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let data = Base64URLCodec.decodeIfValid(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not base64url")
            }
            return data
        }
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = parseTimestamp(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 time")
            }
            return date
        }
        return decoder
    }

    /// An encoder for request bodies.
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dataEncodingStrategy = .custom { data, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Base64URLCodec.encode(data))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// An RFC 3339 time such as `2026-11-29T18:30:00Z` or `2026-11-29T18:30:00.250+09:00`.
    static func parseTimestamp(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle()) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// The field path and a safe explanation of a decoding failure.
    static func describe(_ error: any Error) -> (field: String, detail: String) {
        guard let error = error as? DecodingError else { return ("", "The response body could not be read.") }
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath + [key])
            return (field, "\(field) is missing.")
        case .valueNotFound(_, let context):
            let field = path(context.codingPath)
            return (field, "\(field) is null.")
        case .typeMismatch(_, let context):
            let field = path(context.codingPath)
            return (field, "\(field.isEmpty ? "The body" : field) has the wrong type: \(context.debugDescription)")
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            if field.isEmpty { return ("", "The response body is not JSON of the expected shape.") }
            return (field, "\(field) is \(context.debugDescription).")
        @unknown default:
            return ("", "The response body could not be read.")
        }
    }

    /// `sessions[1].expiresAt` for the coding path `sessions`, `1`, `expiresAt`.
    static func path(_ keys: [any CodingKey]) -> String {
        var text = ""
        for key in keys {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : "." + key.stringValue
            }
        }
        return text
    }
}

/// Media types as the client compares them: type and subtype, case-insensitively, without parameters.
enum MediaType {
    static func essence(_ value: String?) -> String {
        guard let value else { return "" }
        let bare = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return bare.trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// `application/json` or any `+json` type, problem documents included.
    static func isJSON(_ value: String?) -> Bool {
        let type = essence(value)
        return type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json"))
    }

    static func isProblemJSON(_ value: String?) -> Bool { essence(value) == "application/problem+json" }
}
