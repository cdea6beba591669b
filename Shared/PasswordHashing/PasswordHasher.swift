import CArgon2
import Crypto

/// Hashes and verifies passwords with argon2id, storing PHC strings (`$argon2id$v=19$m=…,t=…,p=…$salt$hash`).
///
/// Both calls take tens of milliseconds of CPU on purpose: run them on threads of their own, with bounded
/// concurrency, never on an event loop.
public struct PasswordHasher: Sendable {
    /// argon2id cost parameters.
    public struct Parameters: Sendable, Hashable {
        /// Memory in KiB.
        public var memoryKiB: UInt32
        public var iterations: UInt32
        public var parallelism: UInt32

        public init(memoryKiB: UInt32, iterations: UInt32, parallelism: UInt32) {
            self.memoryKiB = memoryKiB
            self.iterations = iterations
            self.parallelism = parallelism
        }

        /// OWASP's recommended argon2id setting: m = 19 MiB, t = 2, p = 1.
        public static let recommended = Parameters(memoryKiB: 19 * 1024, iterations: 2, parallelism: 1)
    }

    /// Passwords longer than this (in UTF-8 bytes) are refused before any hashing.
    public static let maximumPasswordLength = 1024
    /// Stored hashes whose cost exceeds these are refused rather than computed.
    static let maximumMemoryKiB: UInt32 = 1024 * 1024
    static let maximumIterations: UInt32 = 64
    static let maximumParallelism: UInt32 = 16

    static let saltLength = 16
    static let hashLength = 32

    public let parameters: Parameters
    private let random: any RandomSource
    /// A hash of a random password, verified against when the account is unknown so the response takes as long.
    private let dummyHash: String

    public init(parameters: Parameters = .recommended, random: any RandomSource = SecureRandom()) {
        self.parameters = parameters
        self.random = random
        let dummyPassword = random.bytes(count: 32).map { String($0, radix: 16) }.joined()
        // Hashing a fixed-length random password with valid parameters cannot fail.
        self.dummyHash = (try? Self.encode(Array(dummyPassword.utf8), salt: random.bytes(count: Self.saltLength),
            parameters: parameters)) ?? ""
    }

    /// Hashes `password` with a fresh random salt.
    public func hash(_ password: String) throws -> String {
        let bytes = Array(password.utf8)
        guard bytes.count <= Self.maximumPasswordLength else { throw PasswordHashingError.passwordTooLong }
        return try Self.encode(bytes, salt: random.bytes(count: Self.saltLength), parameters: parameters)
    }

    /// Whether `password` matches the PHC string `encoded`. Malformed or unreasonably costly hashes never match.
    public func verify(_ password: String, against encoded: String) -> Bool {
        let bytes = Array(password.utf8)
        guard bytes.count <= Self.maximumPasswordLength, let stored = PHCString(encoded),
            stored.memoryKiB <= Self.maximumMemoryKiB, stored.iterations <= Self.maximumIterations,
            stored.parallelism <= Self.maximumParallelism
        else { return false }
        // argon2id_verify recomputes the hash and compares in constant time.
        return argon2id_verify(encoded, bytes, bytes.count) == ARGON2_OK.rawValue
    }

    /// Spends the same work as a real verification and returns false; for sign-ins with an unknown email.
    public func verifyDummy(_ password: String) -> Bool {
        _ = verify(password, against: dummyHash)
        return false
    }

    /// Whether a stored hash was made with other parameters than the current ones and should be replaced at the
    /// next successful sign-in.
    public func needsRehash(_ encoded: String) -> Bool {
        guard let stored = PHCString(encoded) else { return true }
        return stored.memoryKiB != parameters.memoryKiB || stored.iterations != parameters.iterations
            || stored.parallelism != parameters.parallelism
    }

    private static func encode(_ password: [UInt8], salt: [UInt8], parameters: Parameters) throws -> String {
        let length = argon2_encodedlen(
            parameters.iterations, parameters.memoryKiB, parameters.parallelism, UInt32(salt.count),
            UInt32(hashLength), Argon2_id)
        var buffer = [CChar](repeating: 0, count: length)
        let status = argon2id_hash_encoded(
            parameters.iterations, parameters.memoryKiB, parameters.parallelism, password, password.count, salt,
            salt.count, hashLength, &buffer, length)
        guard status == ARGON2_OK.rawValue else {
            throw PasswordHashingError.hashingFailed(String(cString: argon2_error_message(status)))
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Why a password could not be hashed.
public enum PasswordHashingError: Error, Equatable, Sendable {
    case passwordTooLong
    case hashingFailed(String)
    /// Too many hashing jobs are queued already.
    case busy
}

/// The parameters of an argon2id PHC string, read without trusting it.
struct PHCString {
    let memoryKiB: UInt32
    let iterations: UInt32
    let parallelism: UInt32

    init?(_ encoded: String) {
        guard encoded.utf8.count <= 512 else { return nil }
        let fields = encoded.split(separator: "$", omittingEmptySubsequences: false)
        // "", "argon2id", "v=19", "m=…,t=…,p=…", salt, hash
        guard fields.count == 6, fields[0].isEmpty, fields[1] == "argon2id", fields[2] == "v=19",
            !fields[4].isEmpty, !fields[5].isEmpty
        else { return nil }
        var values: [Substring: UInt32] = [:]
        for pair in fields[3].split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let value = UInt32(parts[1]) else { return nil }
            values[parts[0]] = value
        }
        guard values.count == 3, let m = values["m"], let t = values["t"], let p = values["p"], m > 0, t > 0, p > 0
        else { return nil }
        memoryKiB = m
        iterations = t
        parallelism = p
    }
}
