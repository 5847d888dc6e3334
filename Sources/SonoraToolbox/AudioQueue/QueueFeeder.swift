import Foundation
import SonoraCore

/// One thread that refills every queue on an output (`AudioQueueOutput`): converts or
/// decodes into their rings and hands their buffers back through their callbacks, where
/// each queue had its own thread do it.
///
/// Why: with 64 players on a device, each queue's thread woke on its own whenever its ring
/// fell to the refill mark — 64 context switches per refill round, the largest cost beside
/// the mixing itself (perf, `sonora-bench sounds`). Here the render side wakes one thread
/// (`wake`: a `sem_post`, realtime-safe; posts that arrive while it works coalesce into
/// one more round), and that thread serves every member queue in turn, each to its fixed
/// point, as the queue's own thread would.
///
/// What stays on the queue's own thread: control calls' barriers (`barrier`), property
/// listeners from the program side, and every queue whose callbacks run on a dispatch
/// queue the program gave (the program's own "run loop": its callbacks must not wait
/// behind, or make others wait behind, that queue). A pass takes the queue's `passLock`
/// without waiting (`serve(waiting: false)`): when the queue's own thread or a control call
/// holds it, this round wakes the queue's own thread instead, which serves it after them.
///
/// One queue's callback must not stall the others: the output's device watcher calls
/// `checkStalled` every 50 ms; a queue served for longer than `stallLimit` leaves the
/// feeder (back to its own thread, which is woken), and a new feeder thread takes the
/// other queues; the stalled thread ends once that queue's pass returns. Callbacks of one
/// queue keep their order: a queue is served by one thread at a time (its `passLock`).
final class QueueFeeder: @unchecked Sendable {
    /// How long one queue may hold the feeder before the others move to a new thread.
    static let stallLimit: Double = 0.1

    private let semaphore: UnsafeMutablePointer<sem_t>

    // Under `lock`.
    private let lock = NSLock()
    private let changed = NSCondition()
    private var members: [ObjectIdentifier: WeakMember] = [:]
    /// The thread serving now (its generation): older generations exit after their pass.
    private var generation = 0
    private var stopping = false
    /// The queue being served now and since when (CLOCK_MONOTONIC seconds), per generation.
    private var serving: (queue: ObjectIdentifier, since: Double, generation: Int, thread: pthread_t)?
    /// The current generation's thread while it runs (so `stop` waits for it).
    private var runningGeneration: Int?
    /// Every feeder thread still running (stalled ones too): `stop` from one of them, e.g. a
    /// callback that disposes of the output's last queue, must not wait for itself.
    private var feederThreads: [pthread_t] = []
    private var stalledCount = 0
    private var roundCount = 0

    /// Queues that left the feeder because their pass stalled it.
    var stalledQueues: Int { lock.withLock { stalledCount } }
    /// Rounds served (the feeder, not the queues' own threads, refilled).
    var rounds: Int { lock.withLock { roundCount } }

    private struct WeakMember { weak var queue: AudioQueue? }

    init() {
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
    }

    deinit {
        stop()
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    /// Wakes the feeder for a round. Realtime-safe (a `sem_post`).
    @inline(__always)
    func wake() {
        sem_post(semaphore)
    }

    /// Serves `queue` from now on (starts the thread with the first member).
    func add(_ queue: AudioQueue) {
        lock.lock()
        members[ObjectIdentifier(queue)] = WeakMember(queue: queue)
        if runningGeneration == nil {
            stopping = false
            startThread()
        }
        lock.unlock()
    }

    /// Stops serving `queue`; when this returns the feeder no longer touches it (unless
    /// called from the feeder thread inside that queue's pass, which returns to the feeder).
    func remove(_ queue: AudioQueue) {
        let id = ObjectIdentifier(queue)
        lock.lock()
        members[id] = nil
        lock.unlock()
        changed.lock()
        while true {
            lock.lock()
            let busy = serving.map { $0.queue == id && pthread_equal($0.thread, pthread_self()) == 0 } ?? false
            lock.unlock()
            if !busy { break }
            changed.wait(until: Date(timeIntervalSinceNow: 0.01))
        }
        changed.unlock()
    }

    /// Whether `queue` is served here.
    func contains(_ queue: AudioQueue) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return members[ObjectIdentifier(queue)] != nil
    }

    /// Whether the calling thread is a feeder thread of this feeder serving `queue` now.
    func isServing(_ queue: AudioQueue) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let serving else { return false }
        return serving.queue == ObjectIdentifier(queue) && pthread_equal(serving.thread, pthread_self()) != 0
    }

    /// Ends the thread (after its current pass); queues still members go back to their own
    /// threads. The next `add` starts a thread again.
    func stop() {
        lock.lock()
        stopping = true
        let left = members.values.compactMap(\.queue)
        members = [:]
        let fromFeeder = feederThreads.contains { pthread_equal($0, pthread_self()) != 0 }
        lock.unlock()
        for queue in left { queue.leaveFeeder(self, waiting: false) }
        wake()
        // The thread itself: it ends when this pass returns to its loop.
        if fromFeeder { return }
        changed.lock()
        while true {
            lock.lock()
            let done = runningGeneration == nil
            lock.unlock()
            if done { break }
            changed.wait(until: Date(timeIntervalSinceNow: 0.01))
        }
        changed.unlock()
    }

    /// Control side, every 50 ms while the device runs: a queue served longer than
    /// `stallLimit` leaves the feeder, and a new thread serves the others.
    func checkStalled() {
        lock.lock()
        guard let stalled = serving, stalled.generation == generation, Self.now() - stalled.since > Self.stallLimit else {
            lock.unlock()
            return
        }
        let queue = members[stalled.queue]?.queue
        members[stalled.queue] = nil
        stalledCount += 1
        // The stalled thread keeps its pass and exits after it; the next generation serves the rest.
        runningGeneration = nil
        if !stopping { startThread() }
        lock.unlock()
        queue?.leaveFeeder(self, waiting: false)
    }

    // MARK: The thread

    private func startThread() {
        generation += 1
        let mine = generation
        runningGeneration = mine
        let thread = Thread { [self] in self.run(generation: mine) }
        thread.name = "sonora-feeder"
        thread.start()
    }

    private func run(generation mine: Int) {
        lock.lock()
        feederThreads.append(pthread_self())
        lock.unlock()
        defer {
            lock.lock()
            feederThreads.removeAll { pthread_equal($0, pthread_self()) != 0 }
            lock.unlock()
        }
        while true {
            while sem_wait(semaphore) != 0 {}
            // Posts that came meanwhile are this round's too.
            while sem_trywait(semaphore) == 0 {}
            lock.lock()
            if generation != mine || stopping {
                if runningGeneration == mine { runningGeneration = nil }
                lock.unlock()
                // Another thread may be waiting on the semaphore: hand on a wake-up we took.
                wake()
                signalChanged()
                return
            }
            let round = members.values.compactMap(\.queue)
            roundCount += 1
            lock.unlock()
            for queue in round {
                lock.lock()
                guard generation == mine, members[ObjectIdentifier(queue)] != nil else {
                    lock.unlock()
                    continue
                }
                serving = (ObjectIdentifier(queue), Self.now(), mine, pthread_self())
                lock.unlock()
                // Another thread holds the queue's passes (its own thread for a control call's
                // barrier): that thread runs another pass after it, so no refill waits for the
                // render side's next wake-up (a slice late, with a rate stage's short lookahead).
                if !queue.serve(waiting: false) { queue.worker.wake() }
                lock.lock()
                if serving?.generation == mine { serving = nil }
                lock.unlock()
                signalChanged()
            }
        }
    }

    private func signalChanged() {
        changed.lock()
        changed.broadcast()
        changed.unlock()
    }

    private static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
    }
}
