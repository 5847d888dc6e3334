import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import SonoraToolbox
import SonoraUnits
import Testing

/// Several queues on one device through the hidden mixer (`AudioQueueOutput`), on a scripted
/// device whose cycles run on the test's thread (`PlayedTap`): device sample time s is the
/// tap's frame s.
@Suite("Queues mixed on one device", .serialized)
struct AudioQueueMixerTests {
    static let rate = 48000.0

    func stereoQueue(_ recorder: Recorder, channels: Int = 2, rate: Double = rate) throws -> AudioQueue {
        try AudioQueue(format: .linearPCM(sampleRate: rate, channels: channels, sample: .float32)) { _, buffer in recorder.add(buffer) }
    }

    /// Interleaved samples: small multiples of 1/1024 (their sums are exact in Float).
    func ramp(frames: Int, channels: Int, seed: Int) -> [Float] {
        (0..<frames * channels).map { Float(($0 * 7 + seed * 13) % 61 - 30) / 1024 }
    }

    func firstNonZero(_ samples: [Float]) -> Int? { samples.firstIndex { $0 != 0 } }

    @Test("three queues (two stereo, one mono) on one device: the output is the sum of their samples")
    func outputIsTheSum() throws {
        let device = try PlayedTap(channels: 2, capacity: 48000)
        let output = try AudioQueueOutput(device: device)
        let recorder = Recorder()
        let queues = try [stereoQueue(recorder), stereoQueue(recorder), stereoQueue(recorder, channels: 1)]
        defer { queues.forEach { try? $0.dispose(immediate: true) } }
        let frames = 3000
        let inputs = [ramp(frames: frames, channels: 2, seed: 1), ramp(frames: frames, channels: 2, seed: 2), ramp(frames: frames, channels: 1, seed: 3)]
        for (queue, samples) in zip(queues, inputs) {
            try queue.setOutput(output)
            #expect(queue.output === output && queue.outputUnitInUse === output.unit)
            try enqueue(samples, on: queue)
            try queue.prime()
        }
        #expect(output.queueCount == 3)
        for queue in queues { try queue.start() }
        try device.run(cycles: 16)  // 4,096 frames: the 3,000 queued, then silence
        var expected: [[Float]] = [[], []]
        for frame in 0..<frames {
            for channel in 0..<2 {
                expected[channel].append(inputs[0][frame * 2 + channel] + inputs[1][frame * 2 + channel] + inputs[2][frame])
            }
        }
        for channel in 0..<2 {
            #expect(Array(device.played[channel].prefix(frames)) == expected[channel])
            #expect(device.played[channel].dropFirst(frames).allSatisfy { $0 == 0 })
        }
        #expect(queues.allSatisfy { $0.underruns > 0 })  // each ran dry after its buffer, without harm to the others
        // Leaving: the last queue out stops the device.
        for queue in queues { try queue.stop(immediate: true) }
        try queues[0].setOutput(nil)
        #expect(output.queueCount == 2 && output.isRunning)
        try queues[1].setOutput(nil)
        try queues[2].setOutput(nil)
        #expect(output.queueCount == 0 && !output.isRunning)
        #expect(recorder.count == 3)
    }

    @Test("two queues started for the same future host time begin on the same sample (started in different cycles)")
    func synchronizedStart() throws {
        let device = try PlayedTap(channels: 2, capacity: 48000)
        let output = try AudioQueueOutput(device: device)
        let recorder = Recorder()
        let left = try stereoQueue(recorder), right = try stereoQueue(recorder)
        defer { [left, right].forEach { try? $0.dispose(immediate: true) } }
        let idle = try stereoQueue(recorder)  // keeps the device running before the two start
        defer { try? idle.dispose(immediate: true) }
        for queue in [left, right, idle] { try queue.setOutput(output) }
        try idle.start()
        try device.run(cycles: 3)
        // A host time ~1,000.4 frames ahead of the last slice (not on a frame).
        let base = try left.deviceTranslateTime(AudioTimeStamp(sampleTime: 768))
        let target = HostTime(nanoseconds: base.hostTime + UInt64(1000.4 / Self.rate * 1e9))
        try enqueue([Float](repeating: 0.25, count: 2 * 2000).enumerated().map { $0.offset % 2 == 0 ? $0.element : 0 }, on: left)
        try enqueue([Float](repeating: 0.5, count: 2 * 2000).enumerated().map { $0.offset % 2 == 1 ? $0.element : 0 }, on: right)
        try left.prime()
        try right.prime()
        try left.start(atHostTime: target)
        try device.run(cycles: 1)
        try right.start(atHostTime: target)
        try device.run(cycles: 12)
        let leftStart = firstNonZero(device.played[0]), rightStart = firstNonZero(device.played[1])
        #expect(leftStart == 1768, "left began at \(String(describing: leftStart))")
        #expect(rightStart == leftStart, "right began at \(String(describing: rightStart)), left at \(String(describing: leftStart))")
        #expect(Array(device.played[0][1768..<3768]).allSatisfy { $0 == 0.25 })
        #expect(Array(device.played[1][1768..<3768]).allSatisfy { $0 == 0.5 })
    }

    @Test("queues started for one host time, one before the device has run and one after, begin on the same sample")
    func synchronizedStartBeforeTheDeviceRuns() throws {
        let device = try PlayedTap(channels: 2, capacity: 48000)
        let output = try AudioQueueOutput(device: device)
        let recorder = Recorder()
        let left = try stereoQueue(recorder), right = try stereoQueue(recorder)
        defer { [left, right].forEach { try? $0.dispose(immediate: true) } }
        for queue in [left, right] { try queue.setOutput(output) }
        try enqueue([Float](repeating: 0.25, count: 2 * 1000), on: left)
        try enqueue([Float](repeating: 0.5, count: 2 * 1000), on: right)
        try left.prime()
        try right.prime()
        #expect(throws: AudioError.self) { _ = try left.deviceCurrentTime() }  // no reading yet
        // The scripted device's clock starts at its first cycle (about now): ~200 ms on. The
        // first start is converted by the render side (no reading yet), the second by the
        // control side, which finds the first's answer.
        let target = HostTime.now + 200_000_000
        try left.start(atHostTime: target)
        try device.run(cycles: 1)
        try right.start(atHostTime: target)
        try device.run(cycles: 60)
        let found = firstNonZero(device.played[0])
        let leftStart = try #require(found)
        #expect(leftStart > 256)
        // Left's 0.25 alone, then both (0.75), in the same frames.
        #expect(Array(device.played[0][leftStart..<(leftStart + 1000)]).allSatisfy { $0 == 0.75 })
        #expect(device.played[0][leftStart + 1000] == 0)
        #expect(try left.deviceSampleTime(forQueueSampleTime: 0) == Double(leftStart))
        #expect(try right.deviceSampleTime(forQueueSampleTime: 0) == Double(leftStart))
    }

    @Test("time: device ⇄ host translation round trips, queue ⇄ device, the timeline, and the nearest start time is honoured")
    func timeTranslation() throws {
        let device = try PlayedTap(channels: 2, capacity: 48000)
        let output = try AudioQueueOutput(device: device)
        let recorder = Recorder()
        let queue = try stereoQueue(recorder)
        defer { try? queue.dispose(immediate: true) }
        try queue.setOutput(output)
        #expect(throws: AudioError.self) { _ = try queue.deviceSampleTime(forQueueSampleTime: 0) }  // not started yet
        let idle = try stereoQueue(recorder)
        defer { try? idle.dispose(immediate: true) }
        try idle.setOutput(output)
        try idle.start()
        try device.run(cycles: 4)
        // Device sample ⇄ host time.
        for sample in [0.0, 1024, 12345.5, 480_000] {
            let host = try queue.deviceTranslateTime(AudioTimeStamp(sampleTime: sample))
            #expect(host.flags.contains(.sampleHostTimeValid))
            var back = AudioTimeStamp()
            back.hostTime = host.hostTime
            back.flags = .hostTimeValid
            let again = try queue.deviceTranslateTime(back)
            #expect(abs(again.sampleTime - sample) < 0.001, "\(sample) → \(host.hostTime) ns → \(again.sampleTime)")
        }
        // 256 frames apart on the device are 256/48000 s apart on the host clock.
        let a = try queue.deviceTranslateTime(AudioTimeStamp(sampleTime: 2000))
        let b = try queue.deviceTranslateTime(AudioTimeStamp(sampleTime: 2256))
        #expect(abs(Double(b.hostTime - a.hostTime) - 256 / Self.rate * 1e9) < 2)
        // The nearest start: after the slice rendered last (768…1023) and one more slice.
        let nearest = try queue.deviceNearestStartTime()
        #expect(nearest.sampleTime == 1280)
        try enqueue([Float](repeating: 0.125, count: 2 * 1000), on: queue)
        try queue.prime()
        try queue.start(atHostTime: HostTime(nanoseconds: nearest.hostTime))
        try device.run(cycles: 4)  // through device sample 2047
        #expect(firstNonZero(device.played[0]) == 1280)
        // Queue ⇄ device time, and the timeline agrees.
        #expect(try queue.deviceSampleTime(forQueueSampleTime: 100) == 1380)
        #expect(try queue.queueSampleTime(forDeviceSampleTime: 1380) == 100)
        #expect(try queue.queueSampleTime(forDeviceSampleTime: 1000) == -280)
        let time = try queue.createTimeline().currentTime()
        #expect(time.sampleTime == 2048 - 1280)
        #expect(!time.discontinuity)
        // The device's current time is a sample time with now's host time.
        let now = try queue.deviceCurrentTime()
        #expect(now.flags.contains(.sampleHostTimeValid))
    }

    @Test("start at a device sample time on a shared output is exact to the frame")
    func startAtDeviceSampleTime() throws {
        let device = try PlayedTap(channels: 2, capacity: 48000)
        let output = try AudioQueueOutput(device: device)
        let queue = try stereoQueue(Recorder(), channels: 1)
        defer { try? queue.dispose(immediate: true) }
        try queue.setOutput(output)
        try enqueue([Float](repeating: 0.5, count: 300), on: queue)
        try queue.prime()
        try queue.start(atDeviceSampleTime: 1001)
        try device.run(cycles: 8)
        #expect(firstNonZero(device.played[0]) == 1001 && firstNonZero(device.played[1]) == 1001)
        #expect(device.played[0][1001..<1301].allSatisfy { $0 == 0.5 } && device.played[0][1301] == 0)
    }

    @Test("offline queues have no device time; a queue without an output none either")
    func timeErrors() throws {
        let queue = try stereoQueue(Recorder())
        defer { try? queue.dispose(immediate: true) }
        #expect(throws: AudioError(.queueInvalidDevice, "AudioQueue.deviceCurrentTime: \(queue.name): the queue has no device (setCurrentDevice, setOutput or setOutputUnit)")) {
            _ = try queue.deviceCurrentTime()
        }
        try queue.setOfflineRenderFormat(.linearPCM(sampleRate: Self.rate, channels: 2, sample: .float32))
        #expect(throws: AudioError(.queueInvalidOfflineMode, "AudioQueue.deviceNearestStartTime: \(queue.name): an offline queue has no device")) {
            _ = try queue.deviceNearestStartTime()
        }
        #expect(throws: AudioError(.queueInvalidOfflineMode, "AudioQueue.start(atHostTime:): \(queue.name): an offline queue has no host clock (start(atDeviceSampleTime:) takes offline frames)")) {
            try queue.start(atHostTime: HostTime.now)
        }
        #expect(throws: AudioError(.queueInvalidOfflineMode, "AudioQueue.setOutput: \(queue.name): the queue renders offline (setOfflineRenderFormat(nil) first)")) {
            try queue.setOutput(nil)
        }
    }

    @Test("CurrentDevice: queues naming one device share one output, opened with the first and closed with the last; listeners run")
    func currentDeviceSharesOneOutput() throws {
        // "~" is the null device under a name no other suite uses: outputs are shared by
        // name, and suites running beside this one share "null".
        let name = "~"
        let recorder = Recorder()
        let first = try stereoQueue(recorder), second = try stereoQueue(recorder)
        defer { [first, second].forEach { try? $0.dispose(immediate: true) } }
        let changes = SendableBox(0)
        _ = try first.addPropertyListener(.currentDevice) { _, _ in changes.value += 1 }
        #expect(first.currentDevice == nil && AudioQueueOutput.shared(named: name) == nil)
        try first.setCurrentDevice(name)
        try second.setCurrentDevice(name)
        let shared = try #require(AudioQueueOutput.shared(named: name))
        #expect(first.output === shared && second.output === shared && shared.queueCount == 2)
        #expect(first.currentDevice == name && shared.deviceName == name)
        try first.start()
        #expect(shared.isRunning)
        try first.stop(immediate: true)
        #expect(throws: AudioError.self) { try first.setCurrentDevice("SonoraNoSuchDevice:::") }
        #expect(first.output === shared)  // a failed change keeps the device
        try first.setCurrentDevice(nil)
        #expect(AudioQueueOutput.shared(named: name) === shared && shared.queueCount == 1)
        try second.dispose(immediate: true)
        #expect(AudioQueueOutput.shared(named: name) == nil && !shared.isRunning)
        for _ in 0..<2000 where changes.value < 2 { usleep(1000) }
        #expect(changes.value == 2)
    }

    @Test("a device stopped and started again: a start at a host time converts with the new run's clock, not the old one")
    func startAfterTheDeviceRestarted() throws {
        let device = try TimerDevice(configuration: AudioDeviceConfiguration(
            sampleRate: 48000, periodFrames: 256, inputChannels: 0, outputChannels: 2, realtimePriority: nil), mode: .null)
        defer { device.stop() }
        let output = try AudioQueueOutput(device: device)
        let queue = try stereoQueue(Recorder())
        defer { try? queue.dispose(immediate: true) }
        try queue.setOutput(output)
        try queue.start()
        for _ in 0..<2000 where (try? queue.deviceCurrentTime()) == nil { usleep(1000) }
        usleep(20_000)
        try queue.stop(immediate: true)
        let firstOrigin = try queue.deviceSampleTime(forQueueSampleTime: 0)
        try queue.setOutput(nil)  // the last queue out: the device stops
        #expect(!device.isRunning)
        usleep(300_000)  // the device's host time moves on; its sample time will not have
        try queue.setOutput(output)
        try enqueue([Float](repeating: 0.25, count: 2 * 48000), on: queue)
        try queue.prime()
        let target = HostTime.now + 100_000_000
        try queue.start(atHostTime: target)
        var origin: Double?
        for _ in 0..<2000 where origin == nil {
            origin = try? queue.deviceSampleTime(forQueueSampleTime: 0)
            if origin == firstOrigin { origin = nil }  // not taken by the render side yet
            if origin == nil { usleep(1000) }
        }
        var stamp = AudioTimeStamp()
        stamp.hostTime = target.nanoseconds
        stamp.flags = .hostTimeValid
        let expected = try queue.deviceTranslateTime(stamp).sampleTime
        let started = try #require(origin)
        // Within a few frames (the delay-locked loop's reading moves between two reads), far
        // from the 300 ms (14,400 frames) an old reading would put it off by.
        #expect(abs(started - expected) < 48, "started at \(started), the target is sample \(expected)")
        try queue.stop(immediate: true)
    }

    @Test("32 queues at once on one device: the output is their sum, no underrun, no heap call in the cycles")
    func thirtyTwoQueues() throws {
        let device = try PlayedTap(channels: 2, capacity: 48000)
        let output = try AudioQueueOutput(device: device)
        let recorder = Recorder()
        let queues = try (0..<32).map { _ in try stereoQueue(recorder, channels: 1) }
        defer { queues.forEach { try? $0.dispose(immediate: true) } }
        for (index, queue) in queues.enumerated() {
            try queue.setOutput(output)
            try enqueue([Float](repeating: Float(index + 1) / 1024, count: 4096), on: queue)
            try queue.prime()
        }
        #expect(output.queueCount == 32)
        let at = 512
        for queue in queues { try queue.start(atDeviceSampleTime: at) }
        device.countsAllocations = true
        try device.run(cycles: 16)
        #expect(device.allocations == 0, "\(device.allocations) heap calls in the I/O cycles")
        let sum = Float(32 * 33 / 2) / 1024
        for channel in 0..<2 {
            #expect(device.played[channel].prefix(at).allSatisfy { $0 == 0 })
            #expect(device.played[channel][at..<(at + 3072)].allSatisfy { $0 == sum })
        }
        #expect(queues.allSatisfy { $0.underruns == 0 })
    }

    @Test("a queue on an I/O unit of its own starts at a host time and translates device time too")
    func ownUnitStartsAtHostTime() throws {
        let device = try PlayedTap(channels: 2, capacity: 48000)
        let io = IOUnit()
        try io.setDevice(device)
        let queue = try stereoQueue(Recorder())
        defer { try? queue.dispose(immediate: true) }
        try queue.setOutputUnit(io)
        try enqueue([Float](repeating: 0.25, count: 2 * 1000), on: queue)
        try queue.prime()
        try queue.start(atHostTime: HostTime.now + 200_000_000)  // converted at the device's first cycle
        try device.run(cycles: 50)
        let start = try #require(firstNonZero(device.played[0]))
        #expect(start > 256)
        #expect(try queue.deviceSampleTime(forQueueSampleTime: 0) == Double(start))
        #expect(device.played[0][start..<(start + 1000)].allSatisfy { $0 == 0.25 } && device.played[0][start + 1000] == 0)
        let now = try queue.deviceNearestStartTime()
        #expect(now.sampleTime == 51 * 256)
    }
}
