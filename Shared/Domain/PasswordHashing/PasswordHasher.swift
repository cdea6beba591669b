import CArgon2
import Crypto

/// Hashes passwords with argon2id, storing PHC strings (`$argon2id$v=19$m=…,t=…,p=…$salt$hash`), and verifies
/// them and every legacy format `StoredPasswordHash` reads (bcrypt and sha-crypt through libxcrypt, PBKDF2 and
/// scrypt through OpenSSL, argon2i and argon2id with any bounded parameters).
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
        self.dummyHash =
            (try? Self.encode(
                Array(dummyPassword.utf8), salt: random.bytes(count: Self.saltLength),
                parameters: parameters)) ?? ""
    }

    /// Hashes `password` with a fresh random salt.
    public func hash(_ password: String) throws -> String {
        let bytes = Array(password.utf8)
        guard bytes.count <= Self.maximumPasswordLength else { throw PasswordHashingError.passwordTooLong }
        return try Self.encode(bytes, salt: random.bytes(count: Self.saltLength), parameters: parameters)
    }

    /// Whether `password` matches the stored hash `encoded`, in any format `StoredPasswordHash` reads. Unknown,
    /// malformed or unreasonably costly hashes never match (they are refused before anything is computed).
    public func verify(_ password: String, against encoded: String) -> Bool {
        guard let stored = try? StoredPasswordHash(parsing: encoded) else { return false }
        return verify(password, against: stored)
    }

    /// Whether `password` matches `stored`. Every comparison is in constant time.
    public func verify(_ password: String, against stored: StoredPasswordHash) -> Bool {
        let bytes = Array(password.utf8)
        guard bytes.count <= Self.maximumPasswordLength else { return false }
        switch stored.algorithm {
        case .argon2(let argon2):
            return Self.verifyArgon2(bytes, argon2)
        case .bcrypt(_, let cryptText):
            guard let computed = XCrypt.hash(bytes, setting: cryptText) else { return false }
            return constantTimeEquals(computed, Array(cryptText.utf8))
        case .shaCrypt:
            guard let computed = XCrypt.hash(bytes, setting: stored.encoded) else { return false }
            return constantTimeEquals(computed, Array(stored.encoded.utf8))
        case .pbkdf2(let pbkdf2):
            let digest: PasswordKDF.PBKDF2Digest = pbkdf2.digest == .sha256 ? .sha256 : .sha512
            guard
                let computed = try? PasswordKDF.pbkdf2(
                    password: bytes, salt: pbkdf2.salt, iterations: pbkdf2.iterations, digest: digest,
                    length: pbkdf2.derivedKey.count)
            else { return false }
            return constantTimeEquals(computed, pbkdf2.derivedKey)
        case .scrypt(let scrypt):
            guard
                let computed = try? PasswordKDF.scrypt(
                    password: bytes, salt: scrypt.salt, n: scrypt.costN, r: scrypt.blockSize, p: scrypt.parallelism,
                    length: scrypt.derivedKey.count,
                    // OpenSSL counts its own bookkeeping on top of 128·N·r; the parser has bounded N·r already.
                    maximumMemory: 2 * StoredPasswordHash.Limits.scryptMemoryBytes)
            else { return false }
            return constantTimeEquals(computed, scrypt.derivedKey)
        }
    }

    /// Recomputes the argon2 digest from the decoded salt and parameters and compares the raw bytes, so what is
    /// compared does not depend on how the stored string spelled them.
    private static func verifyArgon2(_ password: [UInt8], _ stored: StoredPasswordHash.Argon2) -> Bool {
        var computed = [UInt8](repeating: 0, count: stored.digest.count)
        let type = stored.variant == .argon2id ? Argon2_id : Argon2_i
        let status = argon2_hash(
            stored.iterations, stored.memoryKiB, stored.parallelism, password, password.count, stored.salt,
            stored.salt.count, &computed, computed.count, nil, 0, type, stored.version)
        return status == ARGON2_OK.rawValue && constantTimeEquals(computed, stored.digest)
    }

    /// Spends the same work as a real verification and returns false; for sign-ins with an unknown email.
    public func verifyDummy(_ password: String) -> Bool {
        _ = verify(password, against: dummyHash)
        return false
    }

    /// Whether a stored hash should be replaced at the next successful sign-in: anything but argon2id (version 19)
    /// with exactly the current parameters, a 32-byte digest and a salt of at least 16 bytes, so legacy formats,
    /// argon2i and weaker (or since changed) argon2id settings all converge on the current ones.
    public func needsRehash(_ encoded: String) -> Bool {
        guard let stored = try? StoredPasswordHash(parsing: encoded) else { return true }
        return needsRehash(stored)
    }

    /// Whether `stored` should be replaced at the next successful sign-in; see `needsRehash(_:)` on a string.
    public func needsRehash(_ stored: StoredPasswordHash) -> Bool {
        guard case .argon2(let argon2) = stored.algorithm, argon2.variant == .argon2id, argon2.version == 0x13 else {
            return true
        }
        return argon2.memoryKiB != parameters.memoryKiB || argon2.iterations != parameters.iterations
            || argon2.parallelism != parameters.parallelism || argon2.digest.count != Self.hashLength
            || argon2.salt.count < Self.saltLength
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
