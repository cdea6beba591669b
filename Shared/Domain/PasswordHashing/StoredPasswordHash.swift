import Encoding

/// A stored password hash read without trusting it: which algorithm made it, with which costs, salt and digest.
///
/// Parsing never computes anything. It recognizes the formats other systems store and this one can verify:
/// - argon2i and argon2id PHC strings (`$argon2id$v=19$m=…,t=…,p=…$salt$digest`), also behind Django's `argon2`;
/// - bcrypt (`$2a$`, `$2b$`, `$2y$`), also behind Django's `bcrypt$` (not its `bcrypt_sha256`, which pre-hashes);
/// - sha512-crypt and sha256-crypt (`$6$`, `$5$`, with an optional `rounds=`);
/// - PBKDF2-SHA256/SHA512 as passlib writes it (`$pbkdf2-sha256$iterations$salt$digest`, adapted base64), as Django
///   writes it (`pbkdf2_sha256$iterations$salt$base64`) and as Werkzeug writes it (`pbkdf2:sha256:iterations$salt$hex`);
/// - scrypt as passlib writes it (`$scrypt$ln=…,r=…,p=…$salt$digest`), as Django writes it
///   (`scrypt$N$salt$r$p$base64`) and as Werkzeug writes it (`scrypt:N:r:p$salt$hex`).
///
/// Anything else, or any of these with an absurd cost or a malformed field, is refused with a
/// `StoredPasswordHashError` whose `reason` is a short stable text.
public struct StoredPasswordHash: Sendable, Hashable {
    /// The hash exactly as stored.
    public let encoded: String
    /// What it is and the inputs its verification needs.
    public let algorithm: Algorithm

    /// The families of stored hashes and what verifying each one takes.
    public enum Algorithm: Sendable, Hashable {
        case argon2(Argon2)
        /// Verified by libxcrypt against `cryptText` (`encoded` without Django's `bcrypt$` prefix).
        case bcrypt(cost: Int, cryptText: String)
        /// Verified by libxcrypt against `encoded`; `rounds` is nil where the string leaves the default (5000).
        case shaCrypt(SHACryptVariant, rounds: Int?)
        case pbkdf2(PBKDF2)
        case scrypt(Scrypt)
    }

    /// argon2 inputs decoded from a PHC string.
    public struct Argon2: Sendable, Hashable {
        public enum Variant: String, Sendable, Hashable { case argon2i, argon2id }
        public let variant: Variant
        /// 0x13 (19) or the older 0x10 (16).
        public let version: UInt32
        public let memoryKiB: UInt32
        public let iterations: UInt32
        public let parallelism: UInt32
        public let salt: [UInt8]
        public let digest: [UInt8]
    }

    /// The two SHA-2 crypt(3) schemes, named as `schemeName` gives them.
    public enum SHACryptVariant: String, Sendable, Hashable {
        case sha256Crypt = "sha256-crypt"
        case sha512Crypt = "sha512-crypt"
    }

    /// The digest a PBKDF2 or scrypt hash came from, and who wrote the string (for names only).
    public enum Dialect: String, Sendable, Hashable { case phc, django, werkzeug }

    /// PBKDF2-HMAC inputs.
    public struct PBKDF2: Sendable, Hashable {
        public enum Digest: String, Sendable, Hashable { case sha256, sha512 }
        public let digest: Digest
        public let iterations: Int
        public let salt: [UInt8]
        public let derivedKey: [UInt8]
        public let dialect: Dialect
    }

    /// scrypt inputs.
    public struct Scrypt: Sendable, Hashable {
        /// The CPU/memory cost N, a power of two.
        public let costN: UInt64
        public let blockSize: UInt32
        public let parallelism: UInt32
        public let salt: [UInt8]
        public let derivedKey: [UInt8]
        public let dialect: Dialect
    }

    /// The limits a stored hash must respect; beyond them it is refused rather than ever computed.
    public enum Limits {
        public static let maximumEncodedLength = 512
        public static let argon2MemoryKiB: ClosedRange<UInt32> = 8...(1024 * 1024)
        public static let argon2Iterations: ClosedRange<UInt32> = 1...64
        public static let argon2Parallelism: ClosedRange<UInt32> = 1...16
        public static let bcryptCost: ClosedRange<Int> = 4...16
        public static let shaCryptRounds: ClosedRange<Int> = 1000...1_000_000
        public static let pbkdf2Iterations: ClosedRange<Int> = 1...5_000_000
        /// scrypt's memory is 128·N·r bytes.
        public static let scryptMemoryBytes: UInt64 = 128 * 1024 * 1024
        public static let scryptBlockSize: ClosedRange<UInt32> = 1...32
        public static let scryptParallelism: ClosedRange<UInt32> = 1...16
        public static let saltBytes: ClosedRange<Int> = 1...64
        public static let digestBytes: ClosedRange<Int> = 16...64
    }

    /// A short name of the scheme: `argon2id`, `argon2i`, `bcrypt`, `sha512-crypt`, `sha256-crypt`,
    /// `pbkdf2-sha256`, `pbkdf2-sha512`, `scrypt`.
    public var schemeName: String {
        switch algorithm {
        case .argon2(let argon2): argon2.variant.rawValue
        case .bcrypt: "bcrypt"
        case .shaCrypt(let variant, _): variant.rawValue
        case .pbkdf2(let pbkdf2): "pbkdf2-" + pbkdf2.digest.rawValue
        case .scrypt: "scrypt"
        }
    }

    /// Reads `encoded`, refusing anything unknown, malformed or too costly to verify.
    public init(parsing encoded: String) throws(StoredPasswordHashError) {
        guard !encoded.isEmpty else { throw .init(.malformed, "empty_hash") }
        guard encoded.utf8.count <= Limits.maximumEncodedLength else { throw .init(.malformed, "hash_too_long") }
        guard encoded.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .init(.malformed, "hash_not_printable_ascii")
        }
        self.encoded = encoded
        self.algorithm = try Self.algorithm(of: encoded)
    }

    private static func algorithm(of encoded: String) throws(StoredPasswordHashError) -> Algorithm {
        if encoded.hasPrefix("$argon2id$") || encoded.hasPrefix("$argon2i$") {
            return .argon2(try parseArgon2(encoded.dropFirst()))
        }
        if encoded.hasPrefix("argon2$argon2id$") || encoded.hasPrefix("argon2$argon2i$") {
            return .argon2(try parseArgon2(encoded.dropFirst("argon2$".count)))
        }
        if encoded.hasPrefix("$2a$") || encoded.hasPrefix("$2b$") || encoded.hasPrefix("$2y$") {
            return .bcrypt(cost: try parseBcrypt(encoded), cryptText: encoded)
        }
        if encoded.hasPrefix("bcrypt$$2") {
            let cryptText = String(encoded.dropFirst("bcrypt$".count))
            return .bcrypt(cost: try parseBcrypt(cryptText), cryptText: cryptText)
        }
        if encoded.hasPrefix("$6$") { return try parseSHACrypt(encoded, variant: .sha512Crypt, digestLength: 86) }
        if encoded.hasPrefix("$5$") { return try parseSHACrypt(encoded, variant: .sha256Crypt, digestLength: 43) }
        if encoded.hasPrefix("$pbkdf2-sha256$") { return .pbkdf2(try parsePasslibPBKDF2(encoded, digest: .sha256)) }
        if encoded.hasPrefix("$pbkdf2-sha512$") { return .pbkdf2(try parsePasslibPBKDF2(encoded, digest: .sha512)) }
        if encoded.hasPrefix("$scrypt$") { return .scrypt(try parsePasslibScrypt(encoded)) }
        if encoded.hasPrefix("pbkdf2_sha256$") { return .pbkdf2(try parseDjangoPBKDF2(encoded, digest: .sha256)) }
        if encoded.hasPrefix("pbkdf2_sha512$") { return .pbkdf2(try parseDjangoPBKDF2(encoded, digest: .sha512)) }
        if encoded.hasPrefix("scrypt$") { return .scrypt(try parseDjangoScrypt(encoded)) }
        if encoded.hasPrefix("pbkdf2:") { return .pbkdf2(try parseWerkzeugPBKDF2(encoded)) }
        if encoded.hasPrefix("scrypt:") { return .scrypt(try parseWerkzeugScrypt(encoded)) }
        throw .init(.unknownFormat, "unknown_hash_format")
    }

    // MARK: argon2

    /// `argon2id$v=19$m=…,t=…,p=…$salt$digest` (the leading `$` already dropped).
    private static func parseArgon2(_ text: Substring) throws(StoredPasswordHashError) -> Argon2 {
        var fields = text.split(separator: "$", omittingEmptySubsequences: false)
        guard let name = fields.first, let variant = Argon2.Variant(rawValue: String(name)) else {
            throw .init(.unknownFormat, "unknown_hash_format")
        }
        fields.removeFirst()
        // Without a version field the string is of the original 0x10 version.
        var version: UInt32 = 0x10
        if let first = fields.first, first.hasPrefix("v=") {
            switch fields.removeFirst() {
            case "v=19": version = 0x13
            case "v=16": version = 0x10
            default: throw .init(.malformed, "argon2_bad_version")
            }
        }
        guard fields.count == 3 else { throw .init(.malformed, "argon2_bad_fields") }
        let parameters = fields[0].split(separator: ",", omittingEmptySubsequences: false)
        // The order m, t, p is fixed by the PHC format; keyid and data are not supported.
        guard parameters.count == 3, parameters[0].hasPrefix("m="), parameters[1].hasPrefix("t="),
            parameters[2].hasPrefix("p="), let memory = decimal(parameters[0].dropFirst(2), as: UInt32.self),
            let iterations = decimal(parameters[1].dropFirst(2), as: UInt32.self),
            let parallelism = decimal(parameters[2].dropFirst(2), as: UInt32.self)
        else { throw .init(.malformed, "argon2_bad_parameters") }
        guard Limits.argon2MemoryKiB.contains(memory), Limits.argon2Iterations.contains(iterations),
            Limits.argon2Parallelism.contains(parallelism), memory >= 8 * parallelism
        else { throw .init(.costOutOfRange, "argon2_cost_out_of_range") }
        guard let salt = HashBase64.phc.decode(fields[1]), (8...64).contains(salt.count) else {
            throw .init(.malformed, "argon2_bad_salt")
        }
        guard let digest = HashBase64.phc.decode(fields[2]), (4...64).contains(digest.count) else {
            throw .init(.malformed, "argon2_bad_digest")
        }
        return Argon2(
            variant: variant, version: version, memoryKiB: memory, iterations: iterations, parallelism: parallelism,
            salt: salt, digest: digest)
    }

    // MARK: crypt(3) families

    /// `$2b$12$` + 22 characters of salt + 31 of digest, in bcrypt's own base64 alphabet.
    private static func parseBcrypt(_ encoded: String) throws(StoredPasswordHashError) -> Int {
        let bytes = Array(encoded.utf8)
        // The cost is always two digits ("04"…"31").
        guard bytes.count == 60, bytes[6] == UInt8(ascii: "$"),
            bytes[4...5].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            bytes[7...].allSatisfy(isCryptCharacter)
        else { throw .init(.malformed, "bcrypt_malformed") }
        let cost = Int(bytes[4] - UInt8(ascii: "0")) * 10 + Int(bytes[5] - UInt8(ascii: "0"))
        guard Limits.bcryptCost.contains(cost) else { throw .init(.costOutOfRange, "bcrypt_cost_out_of_range") }
        return cost
    }

    /// `$6$[rounds=N$]salt$digest`: salt of 1–16 characters, digest of 86 (sha512) or 43 (sha256).
    private static func parseSHACrypt(
        _ encoded: String, variant: SHACryptVariant, digestLength: Int
    ) throws(StoredPasswordHashError) -> Algorithm {
        var fields = encoded.split(separator: "$", omittingEmptySubsequences: false).dropFirst(2)
        var rounds: Int?
        if let first = fields.first, first.hasPrefix("rounds=") {
            // crypt(3) would clamp an out-of-range or zero-padded count, then never reproduce the stored string.
            guard let value = decimal(first.dropFirst("rounds=".count), as: Int.self) else {
                throw .init(.malformed, "sha_crypt_bad_rounds")
            }
            guard Limits.shaCryptRounds.contains(value) else {
                throw .init(.costOutOfRange, "sha_crypt_rounds_out_of_range")
            }
            rounds = value
            fields.removeFirst()
        }
        guard fields.count == 2, let salt = fields.first, let digest = fields.last, (1...16).contains(salt.utf8.count),
            salt.utf8.allSatisfy(isCryptCharacter), digest.utf8.count == digestLength,
            digest.utf8.allSatisfy(isCryptCharacter)
        else { throw .init(.malformed, variant == .sha512Crypt ? "sha512_crypt_malformed" : "sha256_crypt_malformed") }
        return .shaCrypt(variant, rounds: rounds)
    }

    private static func isCryptCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "."), UInt8(ascii: "/"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"):
            true
        default: false
        }
    }

    // MARK: PBKDF2

    /// passlib: `$pbkdf2-sha256$iterations$salt$digest`, salt and digest in adapted base64.
    private static func parsePasslibPBKDF2(
        _ encoded: String, digest: PBKDF2.Digest
    ) throws(StoredPasswordHashError) -> PBKDF2 {
        let fields = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 5, let iterations = decimal(fields[2], as: Int.self),
            let salt = HashBase64.passlibAdapted.decode(fields[3]),
            let derivedKey = HashBase64.passlibAdapted.decode(fields[4])
        else { throw .init(.malformed, "pbkdf2_malformed") }
        return try pbkdf2(digest, iterations: iterations, salt: salt, derivedKey: derivedKey, dialect: .phc)
    }

    /// Django: `pbkdf2_sha256$iterations$salt$base64`, the salt used as its UTF-8 text.
    private static func parseDjangoPBKDF2(
        _ encoded: String, digest: PBKDF2.Digest
    ) throws(StoredPasswordHashError) -> PBKDF2 {
        let fields = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 4, let iterations = decimal(fields[1], as: Int.self),
            let derivedKey = HashBase64.paddedStandard.decode(fields[3])
        else { throw .init(.malformed, "pbkdf2_malformed") }
        return try pbkdf2(
            digest, iterations: iterations, salt: Array(fields[2].utf8), derivedKey: derivedKey, dialect: .django)
    }

    /// Werkzeug: `pbkdf2:sha256:iterations$salt$hex`, the salt used as its UTF-8 text. Without the iteration count
    /// the string means whatever default the writing Werkzeug version had, so it is refused.
    private static func parseWerkzeugPBKDF2(_ encoded: String) throws(StoredPasswordHashError) -> PBKDF2 {
        let fields = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 3 else { throw .init(.malformed, "pbkdf2_malformed") }
        let method = fields[0].split(separator: ":", omittingEmptySubsequences: false)
        guard method.count == 3, let iterations = decimal(method[2], as: Int.self),
            let derivedKey = Hex.decode(fields[2])
        else { throw .init(.malformed, "pbkdf2_malformed") }
        guard let digest = PBKDF2.Digest(rawValue: String(method[1])) else {
            throw .init(.unknownFormat, "pbkdf2_unsupported_digest")
        }
        return try pbkdf2(
            digest, iterations: iterations, salt: Array(fields[1].utf8), derivedKey: derivedKey, dialect: .werkzeug)
    }

    private static func pbkdf2(
        _ digest: PBKDF2.Digest, iterations: Int, salt: [UInt8], derivedKey: [UInt8], dialect: Dialect
    ) throws(StoredPasswordHashError) -> PBKDF2 {
        guard Limits.pbkdf2Iterations.contains(iterations) else {
            throw .init(.costOutOfRange, "pbkdf2_iterations_out_of_range")
        }
        guard Limits.saltBytes.contains(salt.count) else { throw .init(.malformed, "pbkdf2_bad_salt") }
        guard Limits.digestBytes.contains(derivedKey.count) else { throw .init(.malformed, "pbkdf2_bad_digest") }
        return PBKDF2(digest: digest, iterations: iterations, salt: salt, derivedKey: derivedKey, dialect: dialect)
    }

    // MARK: scrypt

    /// passlib: `$scrypt$ln=log2N,r=…,p=…$salt$digest`, salt and digest in PHC base64.
    private static func parsePasslibScrypt(_ encoded: String) throws(StoredPasswordHashError) -> Scrypt {
        let fields = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 5 else { throw .init(.malformed, "scrypt_malformed") }
        let parameters = fields[2].split(separator: ",", omittingEmptySubsequences: false)
        guard parameters.count == 3, parameters[0].hasPrefix("ln="), parameters[1].hasPrefix("r="),
            parameters[2].hasPrefix("p="), let logN = decimal(parameters[0].dropFirst(3), as: UInt64.self),
            let blockSize = decimal(parameters[1].dropFirst(2), as: UInt32.self),
            let parallelism = decimal(parameters[2].dropFirst(2), as: UInt32.self),
            let salt = HashBase64.phc.decode(fields[3]), let derivedKey = HashBase64.phc.decode(fields[4])
        else { throw .init(.malformed, "scrypt_malformed") }
        guard (1...30).contains(logN) else { throw .init(.costOutOfRange, "scrypt_cost_out_of_range") }
        return try scrypt(
            costN: 1 << logN, blockSize: blockSize, parallelism: parallelism, salt: salt, derivedKey: derivedKey,
            dialect: .phc)
    }

    /// Django: `scrypt$N$salt$r$p$base64`, the salt used as its UTF-8 text.
    private static func parseDjangoScrypt(_ encoded: String) throws(StoredPasswordHashError) -> Scrypt {
        let fields = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 6, let costN = decimal(fields[1], as: UInt64.self),
            let blockSize = decimal(fields[3], as: UInt32.self), let parallelism = decimal(fields[4], as: UInt32.self),
            let derivedKey = HashBase64.paddedStandard.decode(fields[5])
        else { throw .init(.malformed, "scrypt_malformed") }
        return try scrypt(
            costN: costN, blockSize: blockSize, parallelism: parallelism, salt: Array(fields[2].utf8),
            derivedKey: derivedKey, dialect: .django)
    }

    /// Werkzeug: `scrypt:N:r:p$salt$hex`, the salt used as its UTF-8 text.
    private static func parseWerkzeugScrypt(_ encoded: String) throws(StoredPasswordHashError) -> Scrypt {
        let fields = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 3 else { throw .init(.malformed, "scrypt_malformed") }
        let method = fields[0].split(separator: ":", omittingEmptySubsequences: false)
        guard method.count == 4, let costN = decimal(method[1], as: UInt64.self),
            let blockSize = decimal(method[2], as: UInt32.self), let parallelism = decimal(method[3], as: UInt32.self),
            let derivedKey = Hex.decode(fields[2])
        else { throw .init(.malformed, "scrypt_malformed") }
        return try scrypt(
            costN: costN, blockSize: blockSize, parallelism: parallelism, salt: Array(fields[1].utf8),
            derivedKey: derivedKey, dialect: .werkzeug)
    }

    private static func scrypt(
        costN: UInt64, blockSize: UInt32, parallelism: UInt32, salt: [UInt8], derivedKey: [UInt8], dialect: Dialect
    ) throws(StoredPasswordHashError) -> Scrypt {
        guard costN >= 2, costN & (costN - 1) == 0 else { throw .init(.malformed, "scrypt_cost_not_power_of_two") }
        guard Limits.scryptBlockSize.contains(blockSize), Limits.scryptParallelism.contains(parallelism),
            costN <= Limits.scryptMemoryBytes / (128 * UInt64(blockSize))
        else { throw .init(.costOutOfRange, "scrypt_cost_out_of_range") }
        guard Limits.saltBytes.contains(salt.count) else { throw .init(.malformed, "scrypt_bad_salt") }
        guard Limits.digestBytes.contains(derivedKey.count) else { throw .init(.malformed, "scrypt_bad_digest") }
        return Scrypt(
            costN: costN, blockSize: blockSize, parallelism: parallelism, salt: salt, derivedKey: derivedKey,
            dialect: dialect)
    }

    /// A decimal number without sign, leading zeros or anything else, that fits `Value`.
    private static func decimal<S: Collection, Value: FixedWidthInteger>(
        _ text: S, as _: Value.Type
    ) -> Value? where S.Element == UInt8 {
        guard let first = text.first, text.count <= 19, first != UInt8(ascii: "0") || text.count == 1 else {
            return nil
        }
        var value: Value = 0
        for byte in text {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            let (shifted, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowB) = shifted.addingReportingOverflow(Value(byte - UInt8(ascii: "0")))
            guard !overflowA, !overflowB else { return nil }
            value = sum
        }
        return value
    }

    private static func decimal<Value: FixedWidthInteger>(_ text: Substring, as type: Value.Type) -> Value? {
        decimal(text.utf8, as: type)
    }
}

/// Why a stored password hash was refused.
public struct StoredPasswordHashError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of refusal; tests compare these.
    public enum Code: String, Sendable, Hashable {
        /// No format this system verifies.
        case unknownFormat = "unknown_format"
        /// A known format with a field that does not parse.
        case malformed
        /// A known format whose cost is beyond `StoredPasswordHash.Limits`.
        case costOutOfRange = "cost_out_of_range"
    }

    public let code: Code
    /// A short stable text, e.g. `bcrypt_cost_out_of_range`, fit for a rejects file or a log field.
    public let reason: String

    init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { reason }
}
