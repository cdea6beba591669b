import JSON

/// Just enough of JSON Schema (as `openapi.json` uses it) to make example documents from a schema, to find the
/// members it requires, and to check a document against it.
enum Schema {
    /// A member's place in a document.
    struct Path: Equatable, CustomStringConvertible {
        enum Step: Equatable {
            case key(String)
            case index(Int)
        }

        var steps: [Step] = []

        func appending(_ step: Step) -> Path { Path(steps: steps + [step]) }

        /// `sessions[0].expiresAt`, as ``PasskeyClientError/field`` writes it.
        var text: String {
            var text = ""
            for step in steps {
                switch step {
                case .index(let index): text += "[\(index)]"
                case .key(let key): text += text.isEmpty ? key : "." + key
                }
            }
            return text
        }

        var description: String { text }
    }

    /// `schema` with `$ref`s followed.
    static func resolve(_ schema: JSONValue, in document: JSONValue) -> JSONValue {
        var schema = schema
        while let reference = schema["$ref"]?.stringValue, reference.hasPrefix("#/") {
            var node: JSONValue? = document
            for piece in reference.dropFirst(2).split(separator: "/") { node = node?[String(piece)] }
            guard let node else { return .null }
            schema = node
        }
        return schema
    }

    /// The types a schema allows (`type` as a string or a list).
    static func types(_ schema: JSONValue) -> [String] {
        if let type = schema["type"]?.stringValue { return [type] }
        return (schema["type"]?.arrayValue ?? []).compactMap(\.stringValue)
    }

    static func isNullable(_ schema: JSONValue, in document: JSONValue) -> Bool {
        types(resolve(schema, in: document)).contains("null")
    }

    /// A document valid for `schema`, with every optional member present.
    static func example(_ schema: JSONValue, in document: JSONValue) -> JSONValue {
        let schema = resolve(schema, in: document)
        if let constant = schema["const"] { return constant }
        if let first = schema["enum"]?.arrayValue?.first { return first }
        if let first = schema["oneOf"]?.arrayValue?.first { return example(first, in: document) }
        let type = types(schema).first { $0 != "null" } ?? (schema["properties"] != nil ? "object" : "")
        switch type {
        case "string":
            if schema["format"]?.stringValue == "date-time" { return "2026-11-29T18:30:00Z" }
            if schema["format"]?.stringValue == "uri" { return "https://example.com/passkeys" }
            if schema["contentEncoding"]?.stringValue == "base64url" { return "AQID" }
            return "text"
        case "integer", "number":
            return 1
        case "boolean":
            return true
        case "array":
            if schema["maxItems"]?.numberValue == 0 { return [] }
            return .array([example(schema["items"] ?? [:], in: document)])
        case "object":
            var object = JSONObject()
            for (key, member) in schema["properties"]?.objectValue ?? [:] {
                object[key] = example(member, in: document)
            }
            if let additional = schema["additionalProperties"], additional.objectValue != nil {
                object["key"] = example(additional, in: document)
            }
            return .object(object)
        default:
            return .null
        }
    }

    /// The paths of the members `schema` requires in `example` that may not be null.
    static func requiredPaths(_ schema: JSONValue, example: JSONValue, in document: JSONValue, at path: Path = Path())
        -> [Path]
    {
        let schema = resolve(schema, in: document)
        if let first = schema["oneOf"]?.arrayValue?.first {
            return requiredPaths(first, example: example, in: document, at: path)
        }
        var paths: [Path] = []
        if let properties = schema["properties"]?.objectValue {
            for key in (schema["required"]?.arrayValue ?? []).compactMap(\.stringValue) {
                guard let member = properties[key], !isNullable(member, in: document) else { continue }
                paths.append(path.appending(.key(key)))
            }
            for (key, member) in properties {
                guard let value = example[key] else { continue }
                paths += requiredPaths(member, example: value, in: document, at: path.appending(.key(key)))
            }
        }
        if let items = schema["items"], let first = example.arrayValue?.first {
            paths += requiredPaths(items, example: first, in: document, at: path.appending(.index(0)))
        }
        return paths
    }

    /// The paths of every string, number and boolean in `value`.
    static func leafPaths(_ value: JSONValue, at path: Path = Path()) -> [Path] {
        switch value {
        case .object(let object): return object.flatMap { leafPaths($0.value, at: path.appending(.key($0.key))) }
        case .array(let items):
            return items.enumerated().flatMap { leafPaths($0.element, at: path.appending(.index($0.offset))) }
        case .string, .number, .boolean: return [path]
        case .null: return []
        }
    }

    static func removing(_ path: Path, from value: JSONValue) -> JSONValue {
        transform(value, at: path.steps[...]) { _ in nil }
    }

    static func replacing(_ path: Path, in value: JSONValue, with replacement: (JSONValue) -> JSONValue) -> JSONValue {
        transform(value, at: path.steps[...]) { replacement($0) }
    }

    private static func transform(
        _ value: JSONValue, at steps: ArraySlice<Path.Step>, _ change: (JSONValue) -> JSONValue?
    ) -> JSONValue {
        guard let step = steps.first else { return change(value) ?? .null }
        let rest = steps.dropFirst()
        switch (step, value) {
        case (.key(let key), .object(var object)):
            guard let member = object[key] else { return value }
            object[key] = rest.isEmpty ? change(member) : transform(member, at: rest, change)
            return .object(object)
        case (.index(let index), .array(var items)) where items.indices.contains(index):
            if rest.isEmpty, let changed = change(items[index]) {
                items[index] = changed
            } else if rest.isEmpty {
                items.remove(at: index)
            } else {
                items[index] = transform(items[index], at: rest, change)
            }
            return .array(items)
        default:
            return value
        }
    }

    /// What makes `value` invalid for `schema` (empty when it is valid). Objects with `properties` may carry no
    /// other members, so a misspelt member is found too.
    static func validate(_ value: JSONValue, against schema: JSONValue, in document: JSONValue, at path: String = "")
        -> [String]
    {
        let schema = resolve(schema, in: document)
        let here = path.isEmpty ? "(body)" : path
        if let branches = schema["oneOf"]?.arrayValue {
            let results = branches.map { validate(value, against: $0, in: document, at: path) }
            return results.contains { $0.isEmpty } ? [] : ["\(here) matches no branch: \(results)"]
        }
        if let constant = schema["const"], constant != value { return ["\(here) is not \(constant)"] }
        if let options = schema["enum"]?.arrayValue, !options.contains(value) { return ["\(here) is not in the enum"] }
        let allowed = types(schema)
        if !allowed.isEmpty, !allowed.contains(where: { matches(value, type: $0) }) {
            return ["\(here) is not \(allowed)"]
        }
        var problems: [String] = []
        if case .string(let text) = value, schema["contentEncoding"]?.stringValue == "base64url",
            !text.unicodeScalars.allSatisfy({
                ("A"..."Z").contains($0) || ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-"
                    || $0 == "_"
            })
        {
            problems.append("\(here) is not base64url")
        }
        if case .object(let object) = value {
            for key in (schema["required"]?.arrayValue ?? []).compactMap(\.stringValue) where object[key] == nil {
                problems.append("\(path.isEmpty ? key : path + "." + key) is missing")
            }
            if let properties = schema["properties"]?.objectValue {
                for (key, member) in object {
                    let memberPath = path.isEmpty ? key : path + "." + key
                    guard let memberSchema = properties[key] else {
                        problems.append("\(memberPath) is not in the schema")
                        continue
                    }
                    problems += validate(member, against: memberSchema, in: document, at: memberPath)
                }
            }
        }
        if case .array(let items) = value, let itemSchema = schema["items"] {
            for (index, item) in items.enumerated() {
                problems += validate(item, against: itemSchema, in: document, at: "\(path)[\(index)]")
            }
        }
        return problems
    }

    private static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("string", .string), ("boolean", .boolean), ("array", .array), ("object", .object), ("null", .null),
            ("number", .number):
            return true
        case ("integer", .number(let number)):
            return number.rounded() == number
        default:
            return false
        }
    }
}
