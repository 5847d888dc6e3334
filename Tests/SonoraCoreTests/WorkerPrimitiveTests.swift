import SonoraCore
import SonoraTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SonoraCore's `Worker`: jobs in order, woken by the semaphore, drained on stop, and a
/// submit side that never touches the heap.
@Suite("Worker (ring in, semaphore wake-up, normal thread)", .serialized)
struct WorkerPrimitiveTests {
    /// What the worker thread saw, read by the test thread after `stop()` or while polling.
    final class Log: @unchecked Sendable {
        let values = Mutex<[UInt32]>([])
        let tags = Mutex<[UInt32]>([])
        let afterJobs = Atomic<Int>(0)
        let threads = Mutex<Set<UInt>>([])
        /// Jobs seen when each afterJobs ran.
        let jobsAtAfter = Mutex<[Int]>([])
    }

    static func worker(_ log: Log, capacity: Int = 64 * 1024, interval: Double? = nil) throws -> Worker {
        try Worker(name: "test-worker", capacity: capacity, maximumJobSize: 64, interval: interval, perform: { job in
            log.values.withLock { $0.append(job.bytes.loadUnaligned(as: UInt32.self)) }
            log.tags.withLock { $0.append(job.tag) }
            log.threads.withLock { _ = $0.insert(UInt(pthread_self())) }
        }, afterJobs: {
            let seen = log.values.withLock { $0.count }
            log.jobsAtAfter.withLock { $0.append(seen) }
            log.afterJobs.wrappingAdd(1, ordering: .relaxed)
        })
    }

    /// Polls (bounded, no timing asserted) until `condition` holds.
    static func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<4000 {
            if condition() { return true }
            usleep(1000)
        }
        return condition()
    }

    @Test func jobsRunInOrderOnTheWorkerThreadWithTheirTags() throws {
        let log = Log()
        let worker = try Self.worker(log)
        try worker.start()
        for value in UInt32(0)..<2000 {
            var payload = value
            // A full queue is the caller's to handle; here the test waits for room.
            while !worker.submit(tag: value % 7, &payload, count: 4) { sched_yield() }
        }
        worker.stop()
        #expect(log.values.withLock { $0 } == Array(0..<2000))
        #expect(log.tags.withLock { $0 } == (0..<2000).map { UInt32($0) % 7 })
        let threads = log.threads.withLock { $0 }
        #expect(threads.count == 1 && !threads.contains(UInt(pthread_self())))
    }

    @Test func wakeWithoutAJobRunsAfterJobs() throws {
        let log = Log()
        let worker = try Self.worker(log)
        try worker.start()
        let before = log.afterJobs.load(ordering: .relaxed)
        worker.wake()
        #expect(Self.eventually { log.afterJobs.load(ordering: .relaxed) > before })
        // Asleep again: no wake-ups, no calls (no interval set).
        let settled = log.afterJobs.load(ordering: .relaxed)
        usleep(50_000)
        #expect(log.afterJobs.load(ordering: .relaxed) == settled)
        worker.stop()
    }

    @Test func anIntervalWakesTheThreadByItself() throws {
        let log = Log()
        let worker = try Self.worker(log, interval: 0.01)
        try worker.start()
        #expect(Self.eventually { log.afterJobs.load(ordering: .relaxed) >= 3 })
        worker.stop()
    }

    @Test func stopRunsEveryJobSubmittedBeforeItThenOneLastAfterJobs() throws {
        for _ in 0..<20 {
            let log = Log()
            let worker = try Self.worker(log)
            try worker.start()
            for value in UInt32(0)..<100 {
                var payload = value
                #expect(worker.submit(&payload, count: 4))
            }
            worker.stop()
            #expect(log.values.withLock { $0.count } == 100)
            #expect(log.jobsAtAfter.withLock { $0.last } == 100, "afterJobs must run after the last job")
            #expect(!worker.hasPendingJobs)
        }
    }

    @Test func aFullQueueOrAnOversizedJobIsRefusedAndCounted() throws {
        let log = Log()
        let worker = try Self.worker(log, capacity: 256)  // not started: nothing drains
        var payload: UInt32 = 1
        var accepted = 0
        while worker.submit(&payload, count: 4) { accepted += 1 }
        #expect(accepted == 256 / (RecordRing.headerSize + 4))
        #expect(worker.droppedJobs == 1)
        let big = [UInt8](repeating: 0, count: 65)
        #expect(!big.withUnsafeBytes { worker.submit($0.baseAddress, count: $0.count) })
        #expect(worker.droppedJobs == 2)
        #expect(throws: AudioError.self) { try Worker(name: "x", capacity: 64, maximumJobSize: 64) }
        #expect(throws: AudioError.self) { try Worker(name: "x", interval: 0) }
    }

    @Test(.enabled(if: AllocationCounter.isAvailable))
    func submitAndWakeDoNotTouchTheHeap() throws {
        let log = Log()
        let worker = try Worker(name: "test-worker", capacity: 1 << 20, maximumJobSize: 64, perform: { _ in }, afterJobs: {
            log.afterJobs.wrappingAdd(1, ordering: .relaxed)
        })
        try worker.start()
        var payload: (UInt64, UInt64) = (1, 2)
        for _ in 0..<100 {
            _ = worker.submit(&payload, count: 16)  // warm up: first calls may instantiate metadata
            worker.wake()
        }
        var refused = 0
        let calls = AllocationCounter.count {
            for _ in 0..<10_000 {
                if !worker.submit(tag: 3, &payload, count: 16) { refused += 1 }
                worker.wake()
            }
        }
        worker.stop()
        #expect(calls == 0, "\(calls) heap calls in 10,000 submits and wakes")
        #expect(refused == 0)
    }
}
