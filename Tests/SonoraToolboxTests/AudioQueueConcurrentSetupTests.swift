import Foundation
import Synchronization
import SonoraCore
import SonoraHAL
import SonoraUnits
@testable import SonoraToolbox
import Testing

/// A queue set up from two threads at once: one joins and leaves a shared output while the
/// other changes the decode buffer (a new renderer each time). Whatever the interleaving,
/// the output must end up mixing the renderer the queue fills.
@Suite("A queue's output and decode buffer set from two threads", .serialized)
struct AudioQueueConcurrentSetupTests {
    /// Races one decode-buffer change against one `join` per round, the join started 0–100 µs
    /// later (spun) as the rounds go, so the change falls before, inside and after it; returns
    /// the rounds that left the queue's output target on a replaced renderer.
    func raceDecodeBufferAgainst(_ join: () throws -> Void, leave: () throws -> Void, queue: AudioQueue, rounds: Int, failures: Recorder) throws -> Int {
        var mismatches = 0
        for round in 0..<rounds {
            try leave()
            let go = Atomic<Bool>(false)
            let ready = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            DispatchQueue.global().async(group: done) {
                ready.signal()
                while !go.load(ordering: .acquiring) {}
                do { try queue.setDecodeBufferSizeFrames(512 << (round % 3)) } catch { failures.note("setDecodeBufferSizeFrames: \(error)") }
            }
            ready.wait()
            go.store(true, ordering: .releasing)
            let delay = HostTime.now.nanoseconds + UInt64(round % 50) * 2_000
            while HostTime.now.nanoseconds < delay {}
            do { try join() } catch { failures.note("join: \(error)") }
            done.wait()
            let target = try #require(queue.outputTarget)
            if target.renderer !== queue.renderer { mismatches += 1 }
        }
        return mismatches
    }

    // Without `rendererLock` 10–28 of 200 rounds left the output on the old renderer.
    @Test("setOutput racing setDecodeBufferSizeFrames: the shared output mixes the queue's current renderer")
    func sharedOutputFollowsTheRendererReplacedMeanwhile() throws {
        let device = try TimerDevice(configuration: AudioDeviceConfiguration(
            sampleRate: 48000, periodFrames: 64, inputChannels: 0, outputChannels: 2, realtimePriority: nil), mode: .null)
        defer { device.stop() }
        let output = try AudioQueueOutput(device: device)
        // Another queue keeps the device rendering, so the mixer's slices run meanwhile.
        let steady = try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 2, sample: .float32)) { _, _ in }
        defer { try? steady.dispose(immediate: true) }
        try steady.setOutput(output)
        try enqueue([Float](repeating: 0.1, count: 2 * 48000), on: steady)
        try steady.prime()
        try steady.start()

        let queue = try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 2, sample: .float32)) { _, _ in }
        defer { try? queue.dispose(immediate: true) }
        let failures = Recorder()
        let mismatches = try raceDecodeBufferAgainst(
            { try queue.setOutput(output) }, leave: { try queue.setOutput(nil) }, queue: queue, rounds: 200, failures: failures)
        #expect(failures.notes.isEmpty, "\(failures.notes)")
        #expect(mismatches == 0, "\(mismatches) of 200 rounds left the output mixing a replaced renderer")
        #expect(output.queueCount == 2)
    }

    @Test("setOutputUnit racing setDecodeBufferSizeFrames: the unit renders the queue's current renderer")
    func ownUnitFollowsTheRendererReplacedMeanwhile() throws {
        let queue = try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 2, sample: .float32)) { _, _ in }
        defer { try? queue.dispose(immediate: true) }
        let io = IOUnit()
        try io.setDevice(try PlayedTap(channels: 2, capacity: 4800))
        let failures = Recorder()
        let mismatches = try raceDecodeBufferAgainst(
            { try queue.setOutputUnit(io) }, leave: { try queue.setOutputUnit(nil) }, queue: queue, rounds: 150, failures: failures)
        #expect(failures.notes.isEmpty, "\(failures.notes)")
        #expect(mismatches == 0, "\(mismatches) of 150 rounds left the unit rendering a replaced renderer")
    }
}
