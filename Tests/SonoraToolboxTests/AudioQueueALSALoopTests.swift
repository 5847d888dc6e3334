#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SonoraCore
import SonoraHAL
import SonoraTestSupport
import SonoraToolbox
import SonoraUnits
import Synchronization
import Testing

/// A device that keeps what it captured: wraps a real device's I/O procedure and copies
/// each cycle's capture (two channels) into preallocated memory after the procedure ran.
final class CapturingDevice: AudioDevice, @unchecked Sendable {
    let inner: any AudioDevice
    let capacity: Int
    let left: UnsafeMutableBufferPointer<Float>
    let right: UnsafeMutableBufferPointer<Float>
    let frames = Atomic<Int>(0)
    private var procedure: IOProcedure?
    private lazy var target = Target(self)

    init(_ inner: any AudioDevice, capacity: Int) {
        self.inner = inner
        self.capacity = capacity
        left = .allocate(capacity: capacity)
        left.initialize(repeating: 0)
        right = .allocate(capacity: capacity)
        right.initialize(repeating: 0)
    }

    deinit {
        inner.stop()
        left.deallocate()
        right.deallocate()
    }

    var driver: String { inner.driver }
    var format: DeviceFormat { inner.format }
    var isRunning: Bool { inner.isRunning }
    func start(_ procedure: IOProcedure) throws(AudioError) {
        self.procedure = procedure
        try inner.start(IOProcedure(target))
    }
    func stop() { inner.stop() }
    var statistics: DeviceStatistics { inner.statistics }
    func takeEvents() -> [DeviceEvent] { inner.takeEvents() }
    func resetLoad() { inner.resetLoad() }

    var captured: [[Float]] {
        let count = frames.load(ordering: .acquiring)
        return [Array(left.prefix(count)), Array(right.prefix(count))]
    }

    private final class Target: IOCycleTarget, @unchecked Sendable {
        unowned(unsafe) let device: CapturingDevice
        init(_ device: CapturingDevice) { self.device = device }
        override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
            guard let procedure = device.procedure else { return 0 }
            let status = procedure.function(procedure.context, UnsafeMutableRawPointer(cycle))
            let done = device.frames.load(ordering: .relaxed)
            let count = min(cycle.pointee.frameCount, device.capacity - done)
            let input = cycle.pointee.input
            if count > 0 && input.channelCount >= 2 {
                (device.left.baseAddress! + done).update(from: input.samples(0), count: count)
                (device.right.baseAddress! + done).update(from: input.samples(1), count: count)
                device.frames.store(done + count, ordering: .releasing)
            }
            return status
        }
    }
}

/// Queues on Sonora's `sonoraloop` ALSA plugin (capture hears playback one buffer later):
/// started for one host time they begin on the same captured sample; a PCM that vanishes
/// (ENODEV injected at the ALSA chokepoint, re-opens failing) stops them with the reason.
/// Realtime: run this suite alone (`--no-parallel`, REALTIME_SUITES).
@Suite("Audio queues on the sonoraloop ALSA plugin", .serialized, .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct AudioQueueALSALoopTests {
    static let loopNumber = Atomic<Int>(0)

    static func openLoop(faults: PCMFaults = PCMFaults()) throws -> ALSADevice {
        let name = "sonoraloop:aqueue\(loopNumber.add(1, ordering: .relaxed).newValue)"
        return try ALSADevice(
            capture: name, playback: name,
            configuration: AudioDeviceConfiguration(
                sampleRate: 48000, periodFrames: 256, periods: 3, inputChannels: 2, outputChannels: 2,
                sampleFormat: .float32LE, requiresExactPeriod: true, realtimePriority: 60),
            faults: faults)
    }

    func queue(_ recorder: Recorder) throws -> AudioQueue {
        try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 2, sample: .float32)) { _, buffer in recorder.add(buffer) }
    }

    func waitUntil(seconds: Double = 20, _ condition: () -> Bool) {
        let deadline = HostTime.now.seconds + seconds
        while !condition() && HostTime.now.seconds < deadline { usleep(2000) }
    }

    /// One run: `left` (0.25 on the left) is started for a host time 300 ms ahead (its start
    /// starts the device, so the render side converts it), and `right` (0.5 on the right) for
    /// the same host time 50 ms later (converted by the control side from a later reading of
    /// the device's clock). Returns where each began in the capture and the device's xruns.
    func synchronizedRun() throws -> (left: Int?, right: Int?, leftEnd: Int?, xruns: Int) {
        let device = CapturingDevice(try Self.openLoop(), capacity: 48000 * 2)
        let output = try AudioQueueOutput(device: device)
        let recorder = Recorder()
        let left = try queue(recorder), right = try queue(recorder)
        defer { [left, right].forEach { try? $0.dispose(immediate: true) } }
        for queue in [left, right] { try queue.setOutput(output) }
        try enqueue((0..<4000).flatMap { _ in [Float(0.25), 0] }, on: left)
        try enqueue((0..<4000).flatMap { _ in [Float(0), 0.5] }, on: right)
        try left.prime()
        try right.prime()
        let target = HostTime.now + 300_000_000
        try left.start(atHostTime: target)
        usleep(50_000)
        try right.start(atHostTime: target)
        waitUntil { device.frames.load(ordering: .acquiring) >= 48000 }
        for queue in [left, right] {
            if queue.isRunning { try queue.stop(immediate: true) }
            try queue.setOutput(nil)
        }
        let captured = device.captured
        let leftStart = captured[0].firstIndex { $0 != 0 }
        let rightStart = captured[1].firstIndex { $0 != 0 }
        let leftEnd = leftStart.flatMap { start in captured[0][start...].firstIndex { $0 == 0 } }
        return (leftStart, rightStart, leftEnd, device.statistics.xruns)
    }

    @Test("two queues started for the same future host time begin on the same sample of the capture")
    func synchronizedStartOnALSA() throws {
        // An xrun re-aligns the loop mid-stream: on this shared VM it happens now and then,
        // so take the first run without one (up to 4).
        var result = try synchronizedRun()
        var attempts = 1
        while result.xruns > 0 && attempts < 4 {
            result = try synchronizedRun()
            attempts += 1
        }
        guard result.xruns == 0 else {
            Issue.record("every run had an xrun (\(result.xruns) in the last); alignment not measured")
            return
        }
        let leftStart = try #require(result.left)
        #expect(result.right == leftStart, "left began at \(leftStart), right at \(String(describing: result.right))")
        #expect(result.leftEnd == leftStart + 4000)  // every frame once, bit-exact 0.25 through ALSA
    }

    @Test("a PCM that vanishes while two queues play: they stop with the reason, IsRunning false with its listener, every buffer back")
    func vanishingPCM() throws {
        let faults = PCMFaults()
        let device = try Self.openLoop(faults: faults)
        let output = try AudioQueueOutput(device: device)
        let recorder = Recorder()
        let notes = Recorder()
        let queues = try [queue(recorder), queue(recorder)]
        defer {
            queues.forEach { try? $0.dispose(immediate: true) }
            faults.clear()
        }
        for queue in queues {
            try queue.setDecodeBufferSizeFrames(2048)
            try queue.setOutput(output)
            _ = try queue.addPropertyListener(.isRunning) { queue, _ in
                if !queue.isRunning { notes.note(queue.stopReason?.message ?? "no reason") }
            }
            // 4 s of audio per queue in 8 buffers: most of it is still queued when the PCM goes.
            for _ in 0..<8 { try enqueue([Float](repeating: 0.1, count: 2 * 24000), on: queue) }
            try queue.prime()
        }
        // ENODEV after ~30 cycles; every re-open fails while the test looks.
        faults.inject(.availUpdate, errno: ENODEV, afterCalls: 120)
        faults.inject(.open, errno: ENODEV, afterCalls: 0, times: 100_000)
        for queue in queues { try queue.start() }
        waitUntil { queues.allSatisfy { !$0.isRunning } && recorder.count == 16 && notes.notes.count == 2 }
        #expect(queues.allSatisfy { !$0.isRunning })
        #expect(recorder.count == 16, "\(recorder.count) of 16 buffers came back")
        #expect(notes.notes.count == 2 && notes.notes.allSatisfy { $0.contains("went away") && $0.contains("No such device") }, "\(notes.notes)")
        #expect(device.statistics.interruptions >= 1)
        for queue in queues { try queue.setOutput(nil) }  // the device stops with the last queue
        #expect(!device.isRunning)
    }

    @Test("an xrun on the PCM marks the timeline of a playing queue discontinuous; the queue plays on")
    func xrunMarksTheTimeline() throws {
        let faults = PCMFaults()
        let device = try Self.openLoop(faults: faults)
        let output = try AudioQueueOutput(device: device)
        let queue = try queue(Recorder())
        defer {
            try? queue.dispose(immediate: true)
            faults.clear()
        }
        try queue.setDecodeBufferSizeFrames(65536)
        try queue.setOutput(output)
        try enqueue([Float](repeating: 0.1, count: 2 * 60000), on: queue)
        try queue.prime()
        let timeline = try queue.createTimeline()
        // An underrun reported by ALSA (EPIPE) after ~30 cycles.
        faults.inject(.availUpdate, errno: EPIPE, afterCalls: 120)
        try queue.start()
        var marked = false
        waitUntil {
            marked = marked || timeline.currentTime().discontinuity
            return marked && (device.statistics.playbackXruns + device.statistics.captureXruns) > 0
        }
        #expect(device.statistics.xruns > 0)
        #expect(marked)
        #expect(queue.isRunning && queue.stopReason == nil)
        try queue.stop(immediate: true)
        try queue.setOutput(nil)
    }
}
