import Synchronization

/// A context's sticky error (alGetError) and the message of the last error recorded, under
/// the device's lock. Its own object so that buffers (which outlive their context) and the
/// listener record errors without a weak reference to the context: a weak reference gives
/// the context a side table, after which every retain and release of it takes the runtime's
/// slow path — and every API call on the context retains it.
final class ALErrorState: @unchecked Sendable {
    @exclusivity(unchecked) private(set) var error: ALError?
    @exclusivity(unchecked) private(set) var message: String?
    /// Whether `error` may be set, readable without the lock: alGetError with nothing pending
    /// (nearly every call: code written against alGetError asks after each call) returns at
    /// once, as OpenAL Soft's does, instead of taking the device's lock.
    private let pending = Atomic<Bool>(false)

    /// False when no error is pending; true means `take` (under the lock) has one to look at.
    var mayBePending: Bool { pending.load(ordering: .acquiring) }

    /// Records `error` (kept if none is pending, as alGetError's first-error rule) and returns it to throw.
    func record(_ error: ALError, _ message: String) -> ALError {
        if self.error == nil {
            self.error = error
            pending.store(true, ordering: .releasing)
        }
        self.message = message
        return error
    }

    /// Returns and clears the pending error.
    func take() -> ALError? {
        defer {
            error = nil
            pending.store(false, ordering: .releasing)
        }
        return error
    }
}
