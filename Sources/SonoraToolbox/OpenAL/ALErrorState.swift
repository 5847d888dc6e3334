/// A context's sticky error (alGetError) and the message of the last error recorded, under
/// the device's lock. Its own object so that buffers (which outlive their context) and the
/// listener record errors without a weak reference to the context: a weak reference gives
/// the context a side table, after which every retain and release of it takes the runtime's
/// slow path — and every API call on the context retains it.
final class ALErrorState: @unchecked Sendable {
    @exclusivity(unchecked) private(set) var error: ALError?
    @exclusivity(unchecked) private(set) var message: String?

    /// Records `error` (kept if none is pending, as alGetError's first-error rule) and returns it to throw.
    func record(_ error: ALError, _ message: String) -> ALError {
        if self.error == nil { self.error = error }
        self.message = message
        return error
    }

    /// Returns and clears the pending error.
    func take() -> ALError? {
        defer { error = nil }
        return error
    }
}
