import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
@testable import SonoraToolbox
import SonoraUnits
import Testing

/// The capture side wakes the queue's thread once the ring holds what completes the buffer
/// being filled, not every slice: a buffer of four 256-frame slices costs about one wake-up,
/// and every frame still arrives, in order, each buffer full.
@Suite("Input queue: the capture side wakes its thread per buffer, not per slice", .serialized)
struct AudioInputQueueWakeTests {
    @Test("40 slices into buffers of 4 slices: far fewer wake-ups than slices, every frame once, in order")
    func wakesPerBuffer() throws {
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        let recording = InputRecording()
        let queue = try AudioInputQueue(format: format) { recording.callback($0, $1, $2, $3) }
        defer { try? queue.dispose() }
        // 4096 bytes of 16-bit stereo: 1024 frames, four slices of the device's 256.
        for _ in 0..<3 { try queue.enqueue(try queue.allocateBuffer(byteCapacity: 4096)) }
        let device = try RampInput(channels: 2)
        let io = IOUnit()
        try io.setDevice(device)
        try queue.setInputUnit(io)
        try queue.start()
        try device.run(cycles: 4)
        try queue.flush()
        let wakeUpsBefore = queue.worker.wakeUps
        let slices = 40
        for _ in 0..<slices {
            try device.run(cycles: 1)
            usleep(2000)  // a period's wait: the queue's thread runs when woken
        }
        // The warm-up's buffer and ten more, delivered without a flush (each woke the thread).
        let delivered = waitUntil { recording.deliveries.count >= 1 + slices / 4 }
        let wakeUps = queue.worker.wakeUps - wakeUpsBefore
        try queue.stop(immediate: false)
        #expect(delivered, "\(recording.deliveries.count) buffers delivered")
        // Per slice this was at least 40 (one a slice, plus the enqueues); per buffer about 20.
        #expect(wakeUps < slices * 3 / 4, "\(wakeUps) wake-ups for \(slices) slices")
        #expect(recording.deliveries.dropLast().allSatisfy { $0.bytes.count == 4096 })
        let frames = device.next
        let expected = (0..<frames).flatMap { [RampInput.sample($0, 0), RampInput.sample($0, 1)] }
        #expect(recording.allBytes == int16Bytes(expected))
        #expect(queue.capturer.overruns == 0)
    }

    /// Polls (bounded; nothing timed is asserted).
    func waitUntil(_ condition: () -> Bool) -> Bool {
        for _ in 0..<2000 {
            if condition() { return true }
            usleep(1000)
        }
        return condition()
    }
}
