/// A JSON value: what ``JSONReader`` reads and ``JSONWriter`` writes. Objects keep their members in order, so a
/// document written from a value lists its members exactly as they were given.
public indirect enum JSONValue: Sendable, Equatable {
    case object(JSONObject)
    case array([JSONValue])
    case string(String)
    case number(Double)
    case boolean(Bool)
    case null

    /// A whole number (exact up to 2^53, which covers Unix milliseconds).
    public static func integer<Integer: BinaryInteger>(_ value: Integer) -> JSONValue { .number(Double(value)) }

    /// A member of an object (nil when absent or when this is not an object).
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The string, when this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The boolean, when this is a boolean.
    public var boolValue: Bool? {
        if case .boolean(let value) = self { return value }
        return nil
    }

    /// The number, when this is a number.
    public var numberValue: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    /// The elements, when this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members, when this is an object.
    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// True for `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object with the members in the order written.
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(elements)) }
    public init(nilLiteral: ()) { self = .null }
}

/// The members of a JSON object in order, with unique keys and lookup by key. Two objects are equal when they
/// have the same members, whatever their order.
public struct JSONObject: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    /// The members in order.
    public private(set) var members: [(key: String, value: JSONValue)] = []
    /// Key positions, kept only once the object is large enough for hashing to beat a scan: the objects built for
    /// every response have a handful of members, while a parsed object may have thousands (a duplicate check by
    /// scanning would then be quadratic).
    private var positions: [String: Int]?
    private static let indexedFromCount = 16

    /// An empty object.
    public init() {}

    /// An object with `members` in order; a repeated key replaces the earlier value in its place.
    public init(_ members: [(String, JSONValue)]) {
        self.members.reserveCapacity(members.count)
        for (key, value) in members { self[key] = value }
    }

    public init(dictionaryLiteral elements: (String, JSONValue)...) { self.init(elements) }

    /// The number of members.
    public var count: Int { members.count }

    /// The keys in order.
    public var keys: [String] { members.map(\.key) }

    private func position(of key: String) -> Int? {
        if let positions { return positions[key] }
        return members.firstIndex { $0.key == key }
    }

    private mutating func append(_ key: String, _ value: JSONValue) {
        members.append((key, value))
        if positions != nil {
            positions![key] = members.count - 1
        } else if members.count >= Self.indexedFromCount {
            reindex()
        }
    }

    private mutating func reindex() {
        guard members.count >= Self.indexedFromCount else {
            positions = nil
            return
        }
        var index: [String: Int] = [:]
        index.reserveCapacity(members.count)
        for (position, member) in members.enumerated() { index[member.key] = position }
        positions = index
    }

    /// The value for `key`; setting a new key appends it, setting an existing key replaces its value in place,
    /// and setting nil removes the member.
    public subscript(key: String) -> JSONValue? {
        get { position(of: key).map { members[$0].value } }
        set {
            if let position = position(of: key) {
                if let newValue {
                    members[position].value = newValue
                } else {
                    members.remove(at: position)
                    if positions != nil { reindex() }
                }
            } else if let newValue {
                append(key, newValue)
            }
        }
    }

    /// Adds a member whose key is not yet present; returns false (and changes nothing) when it is.
    public mutating func insertNew(_ key: String, _ value: JSONValue) -> Bool {
        guard position(of: key) == nil else { return false }
        append(key, value)
        return true
    }

    public func makeIterator() -> IndexingIterator<[(key: String, value: JSONValue)]> { members.makeIterator() }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.members.allSatisfy { rhs[$0.key] == $0.value }
    }
}
