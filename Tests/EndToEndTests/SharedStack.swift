import Foundation
import Synchronization
import XCTest

/// One stack shared by the tests of a class, started on first use and stopped when the class finishes.
final class SharedStack: Sendable {
    private let state = Mutex<Task<Stack, any Error>?>(nil)
    private let options: @Sendable () async throws -> Stack

    init(_ make: @escaping @Sendable () async throws -> Stack = { try await Stack() }) { options = make }

    /// The stack, started by the first caller.
    func get() async throws -> Stack {
        let task = state.withLock { current -> Task<Stack, any Error> in
            if let current { return current }
            let started = Task { try await options() }
            current = started
            return started
        }
        return try await task.value
    }

    /// Stops the stack, if one was started. Blocks: for `class func tearDown()`.
    func stop() {
        guard
            let task = state.withLock({ current -> Task<Stack, any Error>? in
                defer { current = nil }
                return current
            })
        else { return }
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            if let stack = try? await task.value { await stack.tearDown() }
            done.signal()
        }
        done.wait()
    }
}
