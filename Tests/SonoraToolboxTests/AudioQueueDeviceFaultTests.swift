import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import SonoraToolbox
import SonoraUnits
import Synchronization
import Testing

/// A scripted device (cycles on the test's thread) whose sample time the test can make jump
/// (the frames an xrun skipped, as the ALSA driver's recovery adds them).
final class JumpingTap: ScriptedDevice, @unchecked Sendable {
    var jump = 0.0

    init(channels: Int) throws {
        try super.init(configuration: AudioDeviceConfiguration(
            sampleRate: 48000, periodFrames: 256, inputChannels: 0, outputChannels: channels, realtimePriority: nil))
    }

    override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        cycle.pointee.inputTime.sampleTime += jump
        cycle.pointee.outputTime.sampleTime += jump
        return super.process(cycle)
    }
}

/// A device whose events the test posts, as the HAL's I/O thread posts them: the ALSA
/// driver reports a vanished PCM as an interruption and idles while it re-opens it.
final class FaultyDevice: AudioDevice, @unchecked Sendable {
    let tap: JumpingTap
    private let lock = NSLock()
    private var pending: [DeviceEvent] = []

    init(channels: Int = 2) throws { tap = try JumpingTap(channels: channels) }

    var driver: String { "scripted:faulty" }
    var format: DeviceFormat { tap.format }
    var isRunning: Bool { tap.isRunning }
    func start(_ procedure: IOProcedure) throws(AudioError) { try tap.start(procedure) }
    func stop() { tap.stop() }
    var statistics: DeviceStatistics { tap.statistics }
    func resetLoad() { tap.resetLoad() }
    func takeEvents() -> [DeviceEvent] {
        lock.lock()
        defer { lock.unlock() }
        defer { pending = [] }
        return pending
    }
    func post(_ event: DeviceEvent) {
        lock.lock()
        pending.append(event)
        lock.unlock()
    }
}

@Suite("Queues on a device that fails", .serialized)
struct AudioQueueDeviceFaultTests {
    func waitUntil(_ condition: () -> Bool) {
        for _ in 0..<5000 where !condition() { usleep(1000) }
    }

    func floatQueue(_ recorder: Recorder) throws -> AudioQueue {
        try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 2, sample: .float32)) { _, buffer in recorder.add(buffer) }
    }

    @Test("a device that vanishes while queues play: they stop, IsRunning goes false with its listener, the reason is there, every buffer comes back")
    func vanishedDevice() throws {
        let device = try FaultyDevice()
        let output = try AudioQueueOutput(device: device)
        let recorder = Recorder()
        let queues = try [floatQueue(recorder), floatQueue(recorder)]
        defer { queues.forEach { try? $0.dispose(immediate: true) } }
        let seen = Recorder()
        for queue in queues {
            // A small ring: most of what is queued is still in the queue when the device goes.
            try queue.setDecodeBufferSizeFrames(1024)
            try queue.setOutput(output)
            _ = try queue.addPropertyListener(.isRunning) { queue, _ in
                seen.note("\(queue.isRunning) \(queue.stopReason?.message ?? "no reason")")
            }
            for _ in 0..<3 { try enqueue([Float](repeating: 0.25, count: 2 * 2000), on: queue) }
            try queue.prime()
            try queue.start()
        }
        try device.tap.run(cycles: 2)
        #expect(queues.allSatisfy { $0.isRunning })
        #expect(recorder.count < 6)
        device.post(.interruptionBegan(.playback, errno: ENODEV))
        waitUntil { queues.allSatisfy { !$0.isRunning } && recorder.count == 6 && seen.notes.count == 4 }
        #expect(queues.allSatisfy { !$0.isRunning })
        #expect(recorder.count == 6, "\(recorder.count) of 6 buffers came back")
        for queue in queues {
            let reason = try #require(queue.stopReason)
            #expect(reason.code == .queueInvalidDevice)
            #expect(reason.message.contains(queue.name) && reason.message.contains("went away") && reason.message.contains("playback device failed"), "\(reason)")
        }
        let stops = seen.notes.filter { $0.hasPrefix("false") }
        #expect(stops.count == 2 && stops.allSatisfy { $0.contains("went away") }, "\(seen.notes)")
        // Nothing is left half-done: the queues stay on the output and start again once the
        // device is back (a new start clears the reason).
        #expect(output.queueCount == 2)
        try device.tap.run(cycles: 2)
        try enqueue([Float](repeating: 0.5, count: 2 * 256), on: queues[0])
        try queues[0].start()
        #expect(queues[0].stopReason == nil && queues[0].isRunning)
        try queues[0].stop(immediate: true)
    }

    @Test("the timeline's discontinuity is set when the device's time jumps (an xrun's skipped frames) or it reports an xrun — shared output and own I/O unit")
    func discontinuityFromTheDevice() throws {
        // Shared output.
        let device = try FaultyDevice()
        let output = try AudioQueueOutput(device: device)
        let queue = try floatQueue(Recorder())
        defer { try? queue.dispose(immediate: true) }
        try queue.setDecodeBufferSizeFrames(16384)
        try queue.setOutput(output)
        try enqueue([Float](repeating: 0.25, count: 2 * 12000), on: queue)
        try queue.prime()
        try queue.start()
        let timeline = try queue.createTimeline()
        try device.tap.run(cycles: 4)
        #expect(!timeline.currentTime().discontinuity)
        device.tap.jump += 1024
        try device.tap.run(cycles: 2)
        #expect(timeline.currentTime().discontinuity)
        #expect(output.discontinuities == 1)
        try device.tap.run(cycles: 2)
        #expect(!timeline.currentTime().discontinuity)
        device.post(.xrun(.playback, nanoseconds: 5_000_000, sampleTime: 0))
        var marked = false
        for _ in 0..<5000 where !marked {
            marked = timeline.currentTime().discontinuity
            if !marked { usleep(1000) }
        }
        #expect(marked)
        #expect(queue.underruns == 0)
        try queue.stop(immediate: true)

        // The queue's own I/O unit.
        let own = try JumpingTap(channels: 2)
        let unitQueue = try floatQueue(Recorder())
        defer { try? unitQueue.dispose(immediate: true) }
        let io = IOUnit()
        try io.setDevice(own)
        try unitQueue.setDecodeBufferSizeFrames(16384)
        try unitQueue.setOutputUnit(io)
        try enqueue([Float](repeating: 0.25, count: 2 * 12000), on: unitQueue)
        try unitQueue.prime()
        try unitQueue.start()
        let unitTimeline = try unitQueue.createTimeline()
        try own.run(cycles: 4)
        #expect(!unitTimeline.currentTime().discontinuity)
        own.jump += 512
        try own.run(cycles: 1)
        #expect(unitTimeline.currentTime().discontinuity)
        #expect(unitTimeline.currentTime().sampleTime == 5 * 256)
    }

    @Test("a queue stopped and taken off the mix before the device saw the stop starts again without a false discontinuity")
    func noFalseDiscontinuityAfterRejoining() throws {
        let device = try JumpingTap(channels: 2)
        let output = try AudioQueueOutput(device: device)
        let keeper = try floatQueue(Recorder()), queue = try floatQueue(Recorder())
        defer { [keeper, queue].forEach { try? $0.dispose(immediate: true) } }
        try keeper.setOutput(output)
        try keeper.start()  // keeps the device running
        try queue.setOutput(output)
        try enqueue([Float](repeating: 0.25, count: 2 * 4000), on: queue)
        try queue.prime()
        try queue.start()
        try device.run(cycles: 2)
        try queue.stop(immediate: true)
        try queue.setOutput(nil)  // no cycle in between: the render side never applied the stop
        try device.run(cycles: 3)
        try queue.setOutput(output)
        try enqueue([Float](repeating: 0.25, count: 2 * 4000), on: queue)
        try queue.prime()
        try queue.start()
        let timeline = try queue.createTimeline()
        try device.run(cycles: 2)
        let time = timeline.currentTime()
        #expect(time.sampleTime == 512)
        #expect(!time.discontinuity)
    }
}
