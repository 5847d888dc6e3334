import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import SonoraToolbox
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
    @Test("records from an I/O unit's element 1: every captured frame once, in order; no heap call per cycle")
    func recordsThroughIOUnit() throws {
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        let recording = InputRecording()
        let queue = try AudioInputQueue(format: format) { recording.callback($0, $1, $2, $3) }
        defer { try? queue.dispose() }
        for _ in 0..<3 { try queue.enqueue(try queue.allocateBuffer(byteCapacity: 4096)) }
        let device = try RampInput(channels: 2)
        let io = IOUnit()
        try io.setDevice(device)
        try queue.setInputUnit(io)
        try queue.start()
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
}
