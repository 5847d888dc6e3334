import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import SonoraToolbox
import Testing

/// The input queue's control at the output queue's level: IsRunning's listener, start at a
/// sample time, dispose after the buffers in flight, stop from inside the callback, and the
/// level meter in dB. Offline (deterministic): `offlineCapture` feeds the capture side.
@Suite("Input queue control")
struct AudioInputQueueControlTests {
    /// Records IsRunning's values as its listener sees them.
    final class RunningLog: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [Bool] = []
        func append(_ value: Bool) { lock.lock(); values.append(value); lock.unlock() }
        var all: [Bool] { lock.lock(); defer { lock.unlock() }; return values }
        /// Waits (bounded, no timing asserted) for `count` values: the listener runs on the queue's thread.
        func waitFor(_ count: Int) -> [Bool] {
            for _ in 0..<2000 where all.count < count { usleep(1000) }
            return all
        }
    }

    static let pcm = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .float32)
    static let alac = StreamFormat.compressed(.appleLossless, sampleRate: 44100, channels: 1)

    /// 0, 1, 2 … / 65536: every frame tells where it came from.
    static func ramp(_ count: Int) -> [Float] { (0..<count).map { Float($0) / 65536 } }

    static func samples(_ recording: InputRecording) -> [Float] {
        recording.allBytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    @Test("IsRunning's listener: true on start, false on stop, once each")
    func isRunningListener() throws {
        let recording = InputRecording()
        let queue = try inputQueue(Self.pcm, recording: recording, byteCapacity: 4096)
        defer { try? queue.dispose() }
        let log = RunningLog()
        try queue.addPropertyListener(.isRunning) { queue, _ in log.append(queue.isRunning) }
        try queue.start()
        #expect(log.waitFor(1) == [true])
        try queue.offlineCapture(frames: Self.ramp(1000))
        try queue.stop(immediate: false)
        #expect(log.waitFor(2) == [true, false])
        try queue.stop(immediate: true)  // already stopped: no change to announce
        usleep(20_000)
        #expect(log.all == [true, false])
    }

    @Test("start at a sample time: the first frame kept is that sample's, mid-slice too")
    func startAtSampleTime() throws {
        let recording = InputRecording()
        let queue = try inputQueue(Self.pcm, recording: recording, byteCapacity: 4096)
        defer { try? queue.dispose() }
        try queue.start(atDeviceSampleTime: 1000)
        try queue.offlineCapture(frames: Self.ramp(3000), sliceFrames: 256)
        try queue.stop(immediate: false)
        #expect(Self.samples(recording) == Array(Self.ramp(3000)[1000...]))
        // Start times in the input's sample time: the first buffer's is 1000, then contiguous.
        var expected = 1000
        for delivery in recording.deliveries {
            #expect(delivery.startTime == expected)
            expected += delivery.bytes.count / 4
        }
        #expect(expected == 3000)
        #expect(throws: AudioError.self) { try queue.start(atDeviceSampleTime: -1) }
    }

    @Test("dispose(immediate: false) hands back the encoder's held frames; dispose() drops them")
    func disposeAfterBuffersInFlight() throws {
        func framesDelivered(immediate: Bool) throws -> Int {
            let recording = InputRecording()
            let queue = try inputQueue(Self.alac, recording: recording, byteCapacity: 40_000, descriptions: 8)
            try queue.start()
            try queue.offlineCapture(frames: sixteenBitSignal(frames: 5000, channels: 1))
            try queue.dispose(immediate: immediate)
            #expect(throws: AudioError.self) { try queue.start() }
            return recording.deliveries.flatMap(\.descriptions).reduce(0) { $0 + Int($1.variableFramesInPacket == 0 ? 4096 : $1.variableFramesInPacket) }
        }
        #expect(try framesDelivered(immediate: false) == 5000)
        #expect(try framesDelivered(immediate: true) == 4096)
    }

    @Test("stop(immediate: false) inside the callback is deferred: no deadlock, the rest delivered, then IsRunning false; immediate throws")
    func stopFromInsideTheCallback() throws {
        final class State: @unchecked Sendable {
            var calls = 0
            var immediateError: AudioError?
            var deferredError: AudioError?
        }
        let state = State()
        let recording = InputRecording()
        let queue = try AudioInputQueue(format: Self.pcm) { queue, buffer, start, descriptions in
            state.calls += 1
            if state.calls == 1 {
                do { try queue.stop(immediate: true) } catch { state.immediateError = error as? AudioError }
                do { try queue.stop(immediate: false) } catch { state.deferredError = error as? AudioError }
            }
            recording.callback(queue, buffer, start, descriptions)
        }
        defer { try? queue.dispose() }
        for _ in 0..<3 { try queue.enqueue(try queue.allocateBuffer(byteCapacity: 400 * 4)) }
        let log = RunningLog()
        try queue.addPropertyListener(.isRunning) { queue, _ in log.append(queue.isRunning) }
        try queue.start()
        // One slice: the first buffer fills (the callback stops the queue), the rest still comes back.
        try queue.offlineCapture(frames: Self.ramp(1000), sliceFrames: 1000)
        #expect(state.immediateError?.code == .queueInvalidRunState)
        #expect(state.deferredError == nil)
        #expect(log.waitFor(2) == [true, false])
        #expect(!queue.isRunning)
        #expect(Self.samples(recording) == Self.ramp(1000))
    }

    @Test("CurrentLevelMeterDB: a 0.5-amplitude sine peaks at −6.02 dBFS, averages −9.03")
    func levelMeterDB() throws {
        let recording = InputRecording()
        let queue = try inputQueue(Self.pcm, recording: recording, byteCapacity: 48_000)
        defer { try? queue.dispose() }
        #expect(throws: AudioError.self) { try queue.currentLevelMeterDB() }
        try queue.setLevelMeteringEnabled(true)
        try queue.start()
        try queue.offlineCapture(frames: TestSignal.sine(frequency: 1000, sampleRate: 48000, count: 4800, amplitude: 0.5), sliceFrames: 480)
        let levels = try queue.currentLevelMeterDB()
        #expect(levels.count == 1)
        #expect(abs(levels[0].peak - (-6.02)) < 0.05, "\(levels)")
        #expect(abs(levels[0].average - (-9.03)) < 0.05, "\(levels)")
    }

    @Test("the peak hold keeps a loud slice the current meter has moved past")
    func peakHold() throws {
        let recording = InputRecording()
        let queue = try inputQueue(Self.pcm, recording: recording, byteCapacity: 48_000)
        defer { try? queue.dispose() }
        try queue.setLevelMeteringEnabled(true)
        try queue.start()
        var frames = [Float](repeating: 0.1, count: 4800)
        frames[100] = -0.9
        try queue.offlineCapture(frames: frames, sliceFrames: 480)
        #expect(try queue.currentLevelMeter()[0].peak == 0.1)
        #expect(try queue.levelMeterPeakHold() == [0.9])
    }

    @Test("a removed listener is not called; removing it again is 'invalid parameter'")
    func removedListener() throws {
        let recording = InputRecording()
        let queue = try inputQueue(Self.pcm, recording: recording, byteCapacity: 4096)
        defer { try? queue.dispose() }
        let kept = RunningLog(), removed = RunningLog()
        try queue.addPropertyListener(.isRunning) { queue, _ in kept.append(queue.isRunning) }
        let token = try queue.addPropertyListener(.isRunning) { queue, _ in removed.append(queue.isRunning) }
        try queue.removePropertyListener(.isRunning, token: token)
        #expect(throws: AudioError.self) { try queue.removePropertyListener(.isRunning, token: token) }
        try queue.start()
        try queue.stop(immediate: true)
        #expect(kept.waitFor(2) == [true, false])
        #expect(removed.all.isEmpty)
    }

    @Test("start at a host time: the frame the input stamped with that host time is the first kept")
    func startAtHostTime() throws {
        let recording = InputRecording()
        let queue = try inputQueue(Self.pcm, recording: recording, byteCapacity: 4096)
        defer { try? queue.dispose() }
        let base = HostTime(seconds: 100)
        func host(_ frame: Int) -> HostTime { base + HostTime.nanoseconds(forFrames: Double(frame), sampleRate: 48000) }
        try queue.start(atHostTime: host(1000))
        // As an I/O unit delivers input: slices stamped with their first frame's sample and host time.
        let ramp = Self.ramp(3000)
        let storage = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 256)
        var offset = 0
        while offset < ramp.count {
            let count = min(256, ramp.count - offset)
            let list = storage.list(frameCount: count)
            for index in 0..<count { list[0][index] = ramp[offset + index] }
            queue.capturer.capture(list, sampleTime: offset, hostTime: host(offset))
            offset += count
        }
        try queue.stop(immediate: false)
        #expect(Self.samples(recording) == Array(ramp[1000...]))
        #expect(recording.deliveries.first?.startTime == 1000)
        #expect(throws: AudioError.self) { try queue.start(atHostTime: HostTime(rawValue: 0)) }
    }
}
