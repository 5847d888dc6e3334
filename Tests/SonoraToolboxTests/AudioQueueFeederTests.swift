import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
@testable import SonoraToolbox
import SonoraUnits
import Synchronization
import Testing

/// The output's feeder thread (QueueFeeder): one thread refills every queue on an output
/// whose callbacks run on the queue's thread; a queue whose callback stalls it leaves it,
/// and the others go on; a queue with a dispatch queue of its own keeps its own thread.
@Suite("One feeder thread per output", .serialized)
struct AudioQueueFeederTests {
    /// Which threads ran each queue's callbacks (after `recording` was set), and a stall switch.
    final class Callbacks: @unchecked Sendable {
        let lock = NSLock()
        var threads: [Int: [pthread_t]] = [:]
        var counts: [Int: Int] = [:]
        var recording = false
        /// The queue whose next callback blocks until `release` (at most `stallSeconds`).
        var stallQueue: Int?
        var stalledOn: pthread_t?
        let release = DispatchSemaphore(value: 0)

        func called(_ index: Int) {
            lock.lock()
            if recording {
                threads[index, default: []].append(pthread_self())
                counts[index, default: 0] += 1
            }
            let stalls = stallQueue == index
            if stalls {
                stallQueue = nil
                stalledOn = pthread_self()
            }
            lock.unlock()
            if stalls { _ = release.wait(timeout: .now() + 3) }
        }

        func count(_ index: Int) -> Int { lock.withLock { counts[index] ?? 0 } }
        func threadsOf(_ index: Int) -> [pthread_t] { lock.withLock { threads[index] ?? [] } }
    }

    func queue(_ index: Int, _ callbacks: Callbacks, context: AudioQueue.CallbackContext = .queueThread) throws -> AudioQueue {
        let queue = try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 2, sample: .int16), callbackOn: context) { queue, buffer in
            callbacks.called(index)
            try? queue.enqueue(buffer)
        }
        // 32,768 frames (the player's): half a ring, 0.34 s, outlasts the stall detection.
        try queue.setDecodeBufferSizeFrames(32768)
        return queue
    }

    func fill(_ queue: AudioQueue) throws {
        for index in 0..<3 {
            let buffer = try queue.allocateBuffer(byteCapacity: 2048 * 4)
            buffer.fill(with: (0..<2048 * 2).map { Int16(($0 * 31 + index * 7) % 2000 - 1000) }.withUnsafeBytes { Array($0) })
            try queue.enqueue(buffer)
        }
    }

    func waitUntil(seconds: Double, _ condition: () -> Bool) {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while !condition() && Date() < deadline { usleep(2000) }
    }

    @Test("four queues on one device: their refills and callbacks run on one thread, the output's feeder, not the I/O thread")
    func oneThreadRefillsAll() throws {
        let device = try CountingDevice(periodFrames: 256)
        let output = try AudioQueueOutput(device: device)
        let callbacks = Callbacks()
        let queues = try (0..<4).map { try queue($0, callbacks) }
        defer {
            queues.forEach { try? $0.dispose(immediate: true) }
            device.stop()
        }
        for queue in queues {
            try queue.setOutput(output)
            let wakesFeeder = queue.renderer.wakesFeeder.pointee.load(ordering: .relaxed)
            #expect(wakesFeeder)
            try fill(queue)
            try queue.prime()
        }
        callbacks.lock.withLock { callbacks.recording = true }
        for queue in queues { try queue.start() }
        // Each queue plays 2,048-frame buffers: ~23 callbacks a second each.
        waitUntil(seconds: 10) { (0..<4).allSatisfy { callbacks.count($0) >= 12 } }
        #expect((0..<4).allSatisfy { callbacks.count($0) >= 12 }, "callbacks: \((0..<4).map(callbacks.count))")
        let all = (0..<4).flatMap(callbacks.threadsOf)
        let first = try #require(all.first)
        #expect(all.allSatisfy { pthread_equal($0, first) != 0 }, "callbacks ran on more than one thread")
        #expect(output.feeder.rounds > 0)
        #expect(queues.allSatisfy { $0.underruns == 0 }, "underruns: \(queues.map(\.underruns))")
        // Leaving the output: back to the queue's own thread (no feeder wake-ups from its render side).
        try queues[0].stop(immediate: true)
        try queues[0].setOutput(nil)
        let stillWakesFeeder = queues[0].renderer.wakesFeeder.pointee.load(ordering: .relaxed)
        #expect(!stillWakesFeeder)
        #expect(!output.feeder.contains(queues[0]))
    }

    @Test("a callback that blocks: its queue leaves the feeder, a new feeder thread keeps the other queues playing")
    func stalledCallbackDoesNotStallTheOthers() throws {
        let device = try CountingDevice(periodFrames: 256)
        let output = try AudioQueueOutput(device: device)
        let callbacks = Callbacks()
        let queues = try (0..<3).map { try queue($0, callbacks) }
        defer {
            callbacks.release.signal()
            queues.forEach { try? $0.dispose(immediate: true) }
            device.stop()
        }
        for queue in queues {
            try queue.setOutput(output)
            try fill(queue)
            try queue.prime()
        }
        for queue in queues { try queue.start() }
        callbacks.lock.withLock {
            callbacks.stallQueue = 0
            callbacks.recording = true
        }
        waitUntil(seconds: 5) { callbacks.lock.withLock { callbacks.stalledOn != nil } }
        let stalledOn = try #require(callbacks.lock.withLock { callbacks.stalledOn })
        // Detected within the limit plus a watcher period or two.
        waitUntil(seconds: 5) { output.feeder.stalledQueues == 1 }
        #expect(output.feeder.stalledQueues == 1)
        #expect(!output.feeder.contains(queues[0]) && output.feeder.contains(queues[1]))
        let before = (1..<3).map(callbacks.count)
        // Still blocked: the others' callbacks go on, on a thread other than the stalled one.
        waitUntil(seconds: 5) { (1..<3).allSatisfy { callbacks.count($0) >= before[$0 - 1] + 5 } }
        #expect((1..<3).allSatisfy { callbacks.count($0) >= before[$0 - 1] + 5 }, "callbacks while one stalls: \(before) → \((1..<3).map(callbacks.count))")
        let later = (1..<3).flatMap { Array(callbacks.threadsOf($0).suffix(3)) }
        #expect(later.allSatisfy { pthread_equal($0, stalledOn) == 0 })
        // Released: the stalled queue's callbacks continue (on its own thread), in order.
        let stalledCount = callbacks.count(0)
        callbacks.release.signal()
        waitUntil(seconds: 5) { callbacks.count(0) >= stalledCount + 3 }
        #expect(callbacks.count(0) >= stalledCount + 3)
        #expect(queues[1].underruns == 0 && queues[2].underruns == 0, "underruns: \(queues.map(\.underruns))")
    }

    @Test("a queue whose callbacks go to the program's dispatch queue keeps its own thread")
    func dispatchQueueKeepsItsThread() throws {
        let device = try CountingDevice(periodFrames: 256)
        let output = try AudioQueueOutput(device: device)
        let callbacks = Callbacks()
        let own = try queue(0, callbacks, context: .dispatchQueue(DispatchQueue(label: "feeder-test")))
        let fed = try queue(1, callbacks)
        defer {
            [own, fed].forEach { try? $0.dispose(immediate: true) }
            device.stop()
        }
        for queue in [own, fed] {
            try queue.setOutput(output)
            try fill(queue)
            try queue.prime()
        }
        let ownWakesFeeder = own.renderer.wakesFeeder.pointee.load(ordering: .relaxed)
        #expect(!ownWakesFeeder && !output.feeder.contains(own))
        #expect(output.feeder.contains(fed))
        callbacks.lock.withLock { callbacks.recording = true }
        for queue in [own, fed] { try queue.start() }
        waitUntil(seconds: 10) { callbacks.count(0) >= 6 && callbacks.count(1) >= 6 }
        #expect(callbacks.count(0) >= 6 && callbacks.count(1) >= 6)
    }
}
