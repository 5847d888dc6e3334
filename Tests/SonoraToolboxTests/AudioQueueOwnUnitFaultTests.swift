import Foundation
import SonoraCore
import SonoraHAL
import SonoraTestSupport
import SonoraToolbox
import SonoraUnits
import Testing

/// A queue on an I/O unit of its own (`setOutputUnit`) whose device vanishes: it stops as a
/// queue on a shared output does (IsRunning false with its listener, the reason, every
/// buffer back, the unit stopped).
@Suite("A queue on its own I/O unit when the device vanishes", .serialized)
struct AudioQueueOwnUnitFaultTests {
    func waitUntil(_ condition: () -> Bool) {
        for _ in 0..<5000 where !condition() { usleep(1000) }
    }

    @Test("the device vanishes: the queue stops, IsRunning goes false with its listener, the reason is there, every buffer comes back, the unit stops")
    func vanishedDeviceStopsTheQueue() throws {
        let device = try FaultyDevice()
        let recorder = Recorder()
        let seen = Recorder()
        let queue = try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 2, sample: .float32)) { _, buffer in recorder.add(buffer) }
        defer { try? queue.dispose(immediate: true) }
        try queue.setDecodeBufferSizeFrames(1024)
        let io = IOUnit()
        try io.setDevice(device)
        try queue.setOutputUnit(io)
        _ = try queue.addPropertyListener(.isRunning) { queue, _ in
            seen.note("\(queue.isRunning) \(queue.stopReason?.message ?? "no reason")")
        }
        for _ in 0..<3 { try enqueue([Float](repeating: 0.25, count: 2 * 2000), on: queue) }
        try queue.prime()
        try queue.start()
        try device.tap.run(cycles: 2)
        #expect(queue.isRunning && io.isRunning)
        #expect(recorder.count < 3)
        device.post(.interruptionBegan(.playback, errno: ENODEV))
        waitUntil { !queue.isRunning && recorder.count == 3 && seen.notes.count == 2 }
        #expect(!queue.isRunning)
        #expect(!io.isRunning)
        #expect(recorder.count == 3, "\(recorder.count) of 3 buffers came back")
        let reason = try #require(queue.stopReason)
        #expect(reason.code == .queueInvalidDevice)
        #expect(reason.message.contains(queue.name) && reason.message.contains("went away"), "\(reason)")
        #expect(seen.notes.count == 2 && seen.notes.last?.hasPrefix("false") == true && seen.notes.last?.contains("went away") == true, "\(seen.notes)")
        // The queue starts again on its unit (a new start clears the reason).
        try enqueue([Float](repeating: 0.5, count: 2 * 256), on: queue)
        try queue.start()
        #expect(queue.stopReason == nil && queue.isRunning && io.isRunning)
        try queue.stop(immediate: true)
    }
}
