import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import SonoraToolbox
import SonoraUnits
import Testing

/// A scripted device (its I/O cycles run on the test's thread) that keeps what it played.
final class PlayedTap: ScriptedDevice, @unchecked Sendable {
    let outputs: [UnsafeMutableBufferPointer<Float>]
    private(set) var frames = 0

    init(channels: Int, capacity: Int) throws {
        outputs = (0..<channels).map { _ in
            let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: capacity)
            buffer.initialize(repeating: 0)
            return buffer
        }
        try super.init(configuration: AudioDeviceConfiguration(
            sampleRate: 48000, periodFrames: 256, inputChannels: 0, outputChannels: channels, realtimePriority: nil))
    }

    deinit { outputs.forEach { $0.deallocate() } }

    var played: [[Float]] { outputs.map { Array($0.prefix(frames)) } }

    override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        let status = super.process(cycle)
        let count = min(cycle.pointee.frameCount, (outputs.first?.count ?? 0) - frames)
        if count > 0 {
            for channel in 0..<min(outputs.count, cycle.pointee.output.channelCount) {
                (outputs[channel].baseAddress! + frames).update(from: cycle.pointee.output.samples(channel), count: count)
            }
            frames += count
        }
        return status
    }
}

@Suite("AudioQueue on a device", .serialized)
struct AudioQueueDeviceTests {
    /// Waits (bounded; nothing is asserted about time) for the queue's thread to catch up.
    func waitUntil(_ condition: () -> Bool) {
        for _ in 0..<5000 where !condition() { usleep(1000) }
    }

    @Test("plays through an I/O unit on a device: every frame once, in order, then IsRunning false; no heap call per cycle")
    func playsThroughIOUnit() throws {
        let recorder = Recorder()
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        let queue = try AudioQueue(format: format) { _, buffer in recorder.add(buffer) }
        defer { try? queue.dispose(immediate: true) }
        try queue.setDecodeBufferSizeFrames(16384)
        let device = try PlayedTap(channels: 2, capacity: 48000)
        let io = IOUnit()
        try io.setDevice(device)
        try queue.setOutputUnit(io)
        // Warm-up round, not counted: every path (start, play, the end) runs once first, as
        // the allocation counter's rule says (a first call may instantiate runtime metadata).
        try enqueue([Float](repeating: 0, count: 2 * 100), on: queue, format: format)
        try queue.prime()
        try queue.start()
        try queue.stop(immediate: false)
        try queue.prime()
        // The 100 frames, then the device's buffer: IsRunning goes false once it has played out.
        try device.run(cycles: 2 + device.format.roundTripFrames / 256)
        waitUntil { !queue.isRunning }
        let warmFrames = device.frames
        // 3 buffers of 3000 frames: left counts up, right down (16-bit values, exact in Float).
        var expectedLeft: [Float] = [], expectedRight: [Float] = []
        for part in 0..<3 {
            var samples: [Int16] = []
            for frame in 0..<3000 {
                let value = Int16(part * 3000 + frame - 4500)
                samples += [value, -value]
                expectedLeft.append(Float(value) / 32768)
                expectedRight.append(Float(-value) / 32768)
            }
            let buffer = try queue.allocateBuffer(byteCapacity: samples.count * 2)
            buffer.fill(with: samples.withUnsafeBytes { Array($0) })
            try queue.enqueue(buffer)
        }
        #expect(try queue.prime() == 9000)
        try queue.start()
        #expect(io.isRunning)
        try queue.stop(immediate: false)
        // The scripted device runs as fast as the test thread can: let the queue's thread mark
        // the end first, as a real period's wait would.
        try queue.prime()
        device.countsAllocations = true
        try device.run(cycles: 40)  // 10,240 frames: the 9,000 queued, then silence
        // The queue's thread marks the end, then stops the unit: wait for both (the clean run
        // once read the unit between the two).
        waitUntil { !queue.isRunning && !io.isRunning }
        #expect(!queue.isRunning)
        #expect(!io.isRunning)
        let played = device.played.map { Array($0.dropFirst(warmFrames)) }
        #expect(played[0].count == 40 * 256)
        #expect(Array(played[0].prefix(9000)) == expectedLeft)
        #expect(Array(played[1].prefix(9000)) == expectedRight)
        #expect(played[0].dropFirst(9000).allSatisfy { $0 == 0 })
        #expect(device.allocations == 0, "\(device.allocations) heap calls in the I/O cycles")
        #expect(queue.underruns == 0)
        #expect(recorder.count == 4)
    }

    @Test("stop immediately on a device: the device stops, every buffer comes back")
    func stopImmediatelyOnDevice() throws {
        let recorder = Recorder()
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .float32)
        let queue = try AudioQueue(format: format) { _, buffer in recorder.add(buffer) }
        defer { try? queue.dispose(immediate: true) }
        try queue.setDecodeBufferSizeFrames(512)
        let device = try PlayedTap(channels: 1, capacity: 48000)
        let io = IOUnit()
        try io.setDevice(device)
        try queue.setOutputUnit(io)
        for start in stride(from: 1, through: 1601, by: 400) { try enqueue(numbered(start...(start + 399)).map { $0 / 4096 }, on: queue) }
        try queue.prime()
        try queue.start()
        try device.run(cycles: 1)
        try queue.stop(immediate: true)
        #expect(recorder.count == 5)
        #expect(!io.isRunning && !queue.isRunning)
        #expect(Array(device.played[0].prefix(256)) == numbered(1...256).map { $0 / 4096 })
    }

    @Test("an output unit that cannot open its device: invalid device")
    func invalidDevice() throws {
        let queue = try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 2, sample: .int16)) { _, _ in }
        defer { try? queue.dispose(immediate: true) }
        let io = IOUnit()
        try io.setDevice(named: "hw:CARD=SonoraNoSuchCard")
        do {
            try queue.setOutputUnit(io)
            Issue.record("no error")
        } catch {
            #expect(error.code == .queueInvalidDevice, "\(error)")
            #expect(error.message.contains("AudioQueue.setOutputUnit") && error.message.contains(queue.name), "\(error)")
        }
        // An offline queue has no device; a running one keeps its own.
        try queue.setOfflineRenderFormat(.linearPCM(sampleRate: 48000, channels: 2, sample: .float32))
        #expect(throws: AudioError(.queueInvalidOfflineMode, "AudioQueue.setOutputUnit: \(queue.name): the queue renders offline (setOfflineRenderFormat(nil) first)")) {
            try queue.setOutputUnit(IOUnit())
        }
        try queue.start()
        #expect(throws: AudioError(.queueInvalidRunState, "AudioQueue.setOutputUnit: \(queue.name): stop the queue before changing its output")) {
            try queue.setOutputUnit(nil)
        }
    }
}
