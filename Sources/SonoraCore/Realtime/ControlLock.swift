#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex, for control-side state shared between threads that meet
/// nowhere else (a socket's reader thread and its callers). Swift's `Mutex` on Linux is a
/// futex the thread sanitizer cannot see, so state it guards between two such threads reads
/// as a race there; this lock it sees. Never on a realtime thread.
public final class ControlLock<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// The value lives outside the object, reached through a pointer: a stored property of a
    /// class goes through Swift's dynamic exclusivity checks, which ThreadSanitizer reports as
    /// "Swift access races" of their own — it did for a Void value locked from two threads —
    /// whereas accesses through the pointer are plain memory accesses, checked against the mutex.
    private let storage: UnsafeMutablePointer<Value>

    public init(_ value: Value) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: value)
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Runs `body` with the value, the lock held.
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage.pointee)
    }
}
