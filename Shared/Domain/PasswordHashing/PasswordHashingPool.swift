import WorkerThreads

/// Runs password hashing on threads of its own with bounded concurrency and a bounded queue, so a flood of
/// password attempts is refused at once (`PasswordHashingError.busy`) instead of starving everything else.
public final class PasswordHashingPool: Sendable {
    public let hasher: PasswordHasher
    private let workers: BlockingWorkerPool<Void>

    public init(hasher: PasswordHasher = PasswordHasher(), threadCount: Int, maximumQueueLength: Int = 64) {
        self.hasher = hasher
        self.workers = BlockingWorkerPool(
            name: "argon2", threadCount: threadCount, maximumQueueLength: maximumQueueLength
        ) { () }
    }

    /// Hashes a new password.
    public func hash(_ password: String) async throws -> String {
        try await run { [hasher] in try hasher.hash(password) }
    }

    /// Whether `password` matches `encoded`.
    public func verify(_ password: String, against encoded: String) async throws -> Bool {
        try await run { [hasher] in hasher.verify(password, against: encoded) }
    }

    /// Whether `password` matches the parsed hash `stored` (any format `StoredPasswordHash` reads).
    public func verify(_ password: String, against stored: StoredPasswordHash) async throws -> Bool {
        try await run { [hasher] in hasher.verify(password, against: stored) }
    }

    /// The same work as a verification, always false: for unknown accounts.
    public func verifyDummy(_ password: String) async throws -> Bool {
        try await run { [hasher] in hasher.verifyDummy(password) }
    }

    public func shutdown() { workers.shutdown() }

    private func run<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        do {
            return try await workers.run { _ in try body() }
        } catch is BlockingWorkerPool<Void>.Failure {
            throw PasswordHashingError.busy
        }
    }
}
