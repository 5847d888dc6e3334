import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
@testable import SonoraToolbox
import SonoraUnits
import Testing

/// A scripted device (its I/O cycles run on the test's thread) whose input is a known ramp.
final class RampInput: ScriptedDevice, @unchecked Sendable {
    private(set) var next = 0

    init(channels: Int) throws {
        try super.init(configuration: AudioDeviceConfiguration(
            sampleRate: 48000, periodFrames: 256, inputChannels: channels, outputChannels: 0, realtimePriority: nil))
    }

    /// Frame n's sample on channel c: ((n · (c + 1)) mod 65536 − 32768) / 32768, exact in 16 bits.
    static func sample(_ frame: Int, _ channel: Int) -> Float { Float((frame * (channel + 1)) % 65536 - 32768) / 32768 }

    override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        let input = cycle.pointee.input
        for channel in 0..<input.channelCount {
            for frame in 0..<cycle.pointee.frameCount { input.samples(channel)[frame] = Self.sample(next + frame, channel) }
        }
        next += cycle.pointee.frameCount
        return super.process(cycle)
    }
}

@Suite("Input queue on a device", .serialized)
struct AudioInputQueueDeviceTests {
    /// A 16-bit stereo input queue with three 4096-byte buffers (1024 frames, four of the
    /// device's 256-frame slices each) on a scripted ramp device's I/O unit, started.
    static func startedQueue(_ recording: InputRecording) throws -> (queue: AudioInputQueue, device: RampInput, io: IOUnit) {
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        let queue = try AudioInputQueue(format: format) { recording.callback($0, $1, $2, $3) }
        for _ in 0..<3 { try queue.enqueue(try queue.allocateBuffer(byteCapacity: 4096)) }
        let device = try RampInput(channels: 2)
        let io = IOUnit()
        try io.setDevice(device)
        try queue.setInputUnit(io)
        try queue.start()
        return (queue, device, io)
    }

    @Test("records from an I/O unit's element 1: every captured frame once, in order; no heap call per cycle")
    func recordsThroughIOUnit() throws {
        let recording = InputRecording()
        let (queue, device, io) = try Self.startedQueue(recording)
        defer { try? queue.dispose() }
        #expect(io.isRunning)
        try device.run(cycles: 2)  // warm-up, not counted
        try queue.flush()
        device.countsAllocations = true
        for _ in 0..<40 {
            try device.run(cycles: 1)
            try queue.flush()  // the queue's thread keeps up, as a period's wait lets it
        }
        device.countsAllocations = false
        try queue.stop(immediate: false)
        #expect(!io.isRunning)
        #expect(device.allocations == 0, "\(device.allocations) heap calls in the I/O cycles")
        let frames = device.next
        #expect(frames == 42 * 256)
        let expected = (0..<frames).flatMap { [RampInput.sample($0, 0), RampInput.sample($0, 1)] }
        #expect(recording.allBytes == int16Bytes(expected))
        #expect(queue.capturer.overruns == 0)
    }

    /// The capture side wakes the queue's thread once the ring holds what completes the buffer
    /// being filled, not every slice: a buffer of four 256-frame slices costs about one wake-up
    /// (and its enqueue another), and every frame still arrives, in order, each buffer full.
    @Test("40 slices into buffers of 4 slices: far fewer wake-ups than slices, every frame once, in order")
    func wakesPerBuffer() throws {
        let recording = InputRecording()
        let (queue, device, _) = try Self.startedQueue(recording)
        defer { try? queue.dispose() }
        let capturer = queue.capturer
        // `barrier` (one pass of the queue's thread, waited for) rather than `flush`, which
        // would hand over the buffer half filled.
        try device.run(cycles: 4)
        queue.barrier()
        // The warm-up's 1024 frames filled one buffer; the next wants all of its 1024.
        #expect(capturer.wakeThreshold.load(ordering: .relaxed) == 1024)
        try device.run(cycles: 1)
        queue.barrier()
        #expect(capturer.wakeThreshold.load(ordering: .relaxed) == 768)
        try device.run(cycles: 3)
        queue.barrier()
        let wakeUpsBefore = queue.worker.wakeUps
        let slices = 40
        for _ in 0..<slices {
            try device.run(cycles: 1)
            // As a period's wait would: the thread, if woken, has taken what it was woken for.
            // (This thread is the ring's producer here: the fill is read as any thread may.)
            _ = waitUntil { capturer.ring.approximateFillLevel < capturer.wakeThreshold.load(ordering: .relaxed) }
        }
        // The two of the warm-up and ten more, delivered without a flush (each woke the thread).
        let delivered = waitUntil { recording.deliveries.count >= 2 + slices / 4 }
        let wakeUps = queue.worker.wakeUps - wakeUpsBefore
        try queue.stop(immediate: false)
        #expect(delivered, "\(recording.deliveries.count) buffers delivered")
        // Per slice this was 50 (one a slice, plus the callbacks' enqueues); per buffer about 20.
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
