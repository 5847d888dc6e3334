import Foundation
import Synchronization

/// A thread of its own that calls `body` every `interval` seconds until cancelled: an
/// `AudioQueueOutput`'s device watcher.
///
/// Why not a `DispatchSourceTimer`: on Linux each of its firings woke two threads —
/// libdispatch's manager (its timer) and a worker (the handler) — and with 64 players on a
/// device those two wake-ups, every 50 ms, were 7 % of the players' CPU (schedstat of
/// `sonora-bench sounds`). Here one thread sleeps in `sem_timedwait` and wakes once per look.
/// `cancel()` returns at once; a look in progress finishes, and no look starts after it.
final class DeviceWatchThread: @unchecked Sendable {
    private let semaphore: UnsafeMutablePointer<sem_t>
    private let cancelled = Atomic<Bool>(false)
    private let intervalNanoseconds: Int

    /// Starts the thread; its first look comes `interval` after this.
    init(name: String, interval: Double, body: @escaping @Sendable () -> Void) {
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
        intervalNanoseconds = Int(interval * 1e9)
        // The thread keeps this object (its semaphore) alive until it exits.
        let thread = Thread { [self] in self.run(body) }
        thread.name = name
        thread.start()
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    /// No look starts after this returns (one in progress on the thread finishes); the thread exits.
    func cancel() {
        guard !cancelled.exchange(true, ordering: .sequentiallyConsistent) else { return }
        sem_post(semaphore)
    }

    private func run(_ body: @Sendable () -> Void) {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        while true {
            // Absolute deadlines one interval apart (sem_timedwait measures CLOCK_REALTIME);
            // after a late wake-up (or a clock step) the next look is one interval from now.
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            add(intervalNanoseconds, to: &deadline)
            if Self.nanoseconds(deadline) <= Self.nanoseconds(now) || Self.nanoseconds(deadline) - Self.nanoseconds(now) > 2 * intervalNanoseconds {
                deadline = now
                add(intervalNanoseconds, to: &deadline)
            }
            while sem_timedwait(semaphore, &deadline) != 0 {
                if errno == ETIMEDOUT { break }
            }
            if cancelled.load(ordering: .sequentiallyConsistent) { return }
            body()
        }
    }

    private func add(_ nanoseconds: Int, to time: inout timespec) {
        let total = Int(time.tv_nsec) + nanoseconds
        time.tv_sec += total / 1_000_000_000
        time.tv_nsec = total % 1_000_000_000
    }

    private static func nanoseconds(_ time: timespec) -> Int {
        Int(time.tv_sec) * 1_000_000_000 + Int(time.tv_nsec)
    }
}
