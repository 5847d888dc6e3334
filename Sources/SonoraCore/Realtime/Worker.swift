#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The one way Sonora's realtime side gets slow work done: a job queue in (a lock-free
/// single-producer `RecordRing`), a semaphore to wake the worker (`sem_post` is
/// async-signal- and realtime-safe), and one normal-priority thread that runs the jobs.
///
/// The realtime side calls `submit` (copies the job's bytes into the ring, posts) or,
/// when its data already sits in a ring of its own, just `wake`. Neither allocates,
/// locks or blocks. On the worker thread, after each wake-up, every queued job goes to
/// `perform` in order, then `afterJobs` runs once (a recorder drains its sample ring
/// there); with an `interval`, the thread also wakes by itself that often.
///
/// Used by the file recorder (its writer thread) and the LV2 host (worker:schedule);
/// audio queues and players are to be its next users.
public final class Worker: @unchecked Sendable {
    /// One job as the worker thread sees it; `bytes` is valid only during `perform`.
    public struct Job {
        public let tag: UInt32
        public let bytes: UnsafeRawBufferPointer
    }

    public let name: String
    /// The largest job `submit` takes.
    public let maximumJobSize: Int
    private let jobs: RecordRing
    private let scratch: UnsafeMutableRawPointer
    private let semaphore: UnsafeMutablePointer<sem_t>
    private let intervalNanoseconds: Int?
    private let perform: (Job) -> Void
    private let afterJobs: () -> Void
    private let stopping = Atomic<Bool>(false)
    private let dropped = Atomic<Int>(0)
    private let turns = Atomic<Int>(0)
    private var thread: RealtimeThread?

    /// A stopped worker; `start()` starts its thread. `name` is the thread's name (at most
    /// 15 bytes are shown); `capacity` is the job ring's size in bytes.
    public init(
        name: String, capacity: Int = 64 * 1024, maximumJobSize: Int = 16 * 1024, interval: Double? = nil,
        perform: @escaping (Job) -> Void = { _ in }, afterJobs: @escaping () -> Void = {}
    ) throws(AudioError) {
        guard maximumJobSize > 0, maximumJobSize + RecordRing.headerSize <= capacity else {
            throw AudioError(.parameterError, "worker '\(name)': a job of \(maximumJobSize) bytes does not fit a \(capacity)-byte queue")
        }
        if let interval, !(interval > 0 && interval <= 3600) {
            throw AudioError(.parameterError, "worker '\(name)': interval \(interval) s is not in (0, 3600]")
        }
        self.name = name
        self.maximumJobSize = maximumJobSize
        jobs = try RecordRing(capacity: capacity)
        scratch = .allocate(byteCount: maximumJobSize, alignment: 16)
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
        intervalNanoseconds = interval.map { Int($0 * 1e9) }
        self.perform = perform
        self.afterJobs = afterJobs
    }

    deinit {
        stop()
        sem_destroy(semaphore)
        semaphore.deallocate()
        scratch.deallocate()
    }

    /// Starts the thread (normal scheduling: jobs may block, allocate, log).
    public func start() throws(AudioError) {
        guard thread == nil else { return }
        stopping.store(false, ordering: .relaxed)
        thread = try RealtimeThread(RealtimeThreadOptions(name: name, priority: nil, flushDenormals: false)) { [unowned(unsafe) self] in
            self.serve()
        }
    }

    public var isRunning: Bool { thread != nil }

    /// Queues a job and wakes the thread. Realtime-safe; false (and nothing queued, counted
    /// in `droppedJobs`) if the job is larger than `maximumJobSize` or the queue is full.
    @discardableResult
    public func submit(tag: UInt32 = 0, _ bytes: UnsafeRawPointer?, count: Int) -> Bool {
        guard count <= maximumJobSize, jobs.push(tag: tag, bytes, count: count) else {
            dropped.wrappingAdd(1, ordering: .relaxed)
            return false
        }
        sem_post(semaphore)
        return true
    }

    /// Wakes the thread without a job (it runs `afterJobs`). Realtime-safe.
    @inline(__always)
    public func wake() {
        sem_post(semaphore)
    }

    /// Times the thread has woken (posted or by its interval) and run its jobs and `afterJobs`.
    public var wakeUps: Int { turns.load(ordering: .relaxed) }

    /// Jobs refused by `submit` (too large, or the queue full).
    public var droppedJobs: Int { dropped.load(ordering: .relaxed) }

    /// Whether jobs wait that the thread has not taken yet.
    public var hasPendingJobs: Bool { !jobs.isEmpty }

    /// Stops the thread after it has run every job submitted before this call and one last
    /// `afterJobs`; waits for it. Not from the realtime side.
    public func stop() {
        guard let thread else { return }
        stopping.store(true, ordering: .releasing)
        sem_post(semaphore)
        thread.join()
        self.thread = nil
    }

    private func serve() {
        while true {
            waitForWakeUp()
            turns.wrappingAdd(1, ordering: .relaxed)
            // Read before draining: whatever was submitted before stop() is then in the ring.
            let finishing = stopping.load(ordering: .acquiring)
            while let record = jobs.pop(into: scratch, capacity: maximumJobSize) {
                perform(Job(tag: record.tag, bytes: UnsafeRawBufferPointer(start: scratch, count: record.count)))
            }
            afterJobs()
            if finishing { return }
        }
    }

    private func waitForWakeUp() {
        guard let intervalNanoseconds else {
            while sem_wait(semaphore) != 0 {}
            return
        }
        // sem_timedwait takes a CLOCK_REALTIME deadline: a clock step delays or hastens one
        // periodic wake-up at most; wake-ups posted by the producer are not affected.
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let nanoseconds = Int(deadline.tv_nsec) + intervalNanoseconds
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        while sem_timedwait(semaphore, &deadline) != 0 {
            if errno == ETIMEDOUT { return }
        }
    }
}
