import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import SonoraToolbox
import SonoraUnits
import Testing

/// Queues of other sample rates on a shared output (the hidden mixer at 48 kHz, on a scripted
/// device whose cycles run on the test's thread): each queue's thread converts its stream to
/// the mix rate (with its play rate) before its ring, as Core Audio's queues convert.
@Suite("Queues of other rates on a shared output", .serialized)
struct AudioQueueMixRateTests {
    static let mixRate = 48000.0

    func queue(rate: Double, channels: Int) throws -> AudioQueue {
        try AudioQueue(format: .linearPCM(sampleRate: rate, channels: channels, sample: .float32)) { _, _ in }
    }

    /// Runs `cycles` device cycles, each followed by a barrier on the queues' threads (the
    /// period a real device gives them).
    func run(_ device: PlayedTap, cycles: Int, queues: [AudioQueue]) throws {
        for queue in queues { _ = try queue.prime() }
        for _ in 0..<cycles {
            try device.run(cycles: 1)
            for queue in queues { _ = try queue.prime() }
        }
    }

    @Test("a 44.1 kHz and a 48 kHz queue on one 48 kHz output: the 44.1 kHz sine plays at 1 kHz for exactly 48,000 frames; the 48 kHz queue is bit-exact")
    func twoRatesOnOneOutput() throws {
        let device = try PlayedTap(channels: 2, capacity: 60000)
        let output = try AudioQueueOutput(device: device)
        let slow = try queue(rate: 44100, channels: 2), native = try queue(rate: 48000, channels: 2)
        defer { [slow, native].forEach { try? $0.dispose(immediate: true) } }
        try slow.setOutput(output)
        try native.setOutput(output)
        // 44.1 kHz: a 1 kHz sine on the left; 48 kHz: a ramp of exact values on the right.
        let sine = TestSignal.sine(frequency: 1000, sampleRate: 44100, count: 44100, amplitude: 0.5)
        try enqueue(sine.flatMap { [$0, 0] }, on: slow)
        let ramp = (0..<30000).map { Float($0 % 61 - 30) / 1024 }
        try enqueue(ramp.flatMap { [0, $0] }, on: native)
        let timeline = try slow.createTimeline()
        for queue in [slow, native] {
            try queue.prime()
            try queue.start()
            try queue.stop(immediate: false)
        }
        try run(device, cycles: 200, queues: [slow, native])
        #expect(!slow.isRunning && !native.isRunning)
        #expect(slow.underruns == 0)
        let played = device.played
        // Both began at device frame 0 (started before the first cycle).
        #expect(Array(played[1].prefix(30000)) == ramp)
        #expect(played[1][30000...].allSatisfy { $0 == 0 })
        // ⌈44100 × 48000 ÷ 44100⌉ = 48000 frames, then silence.
        #expect(played[0][47990..<48000].contains { $0 != 0 })
        #expect(played[0][48000...].allSatisfy { $0 == 0 }, "sound after frame 48000: \(String(describing: played[0][48000...].firstIndex { $0 != 0 }))")
        let frequency = SignalMeasurement.frequency(of: Array(played[0][500..<47500]), sampleRate: Self.mixRate)
        #expect(abs(frequency - 1000) < 0.2, "\(frequency) Hz")
        // The queue's time is in its own rate: 48,000 output frames are 44,100 of its frames.
        #expect(abs(timeline.currentTime().sampleTime - 44100) < 1e-6, "\(timeline.currentTime().sampleTime)")
    }

    @Test("a 22.05 kHz mono queue at play rate 2 on a 48 kHz stereo output: 2 kHz on both channels, ⌈22050 × 48000 ÷ (22050 × 2)⌉ = 24,000 frames")
    func lowRateMonoAtPlayRateTwo() throws {
        let device = try PlayedTap(channels: 2, capacity: 40000)
        let output = try AudioQueueOutput(device: device)
        let mono = try queue(rate: 22050, channels: 1)
        defer { try? mono.dispose(immediate: true) }
        try mono.setOutput(output)
        try mono.setTimePitchEnabled(true)
        try mono.setParameter(.playRate, 2)
        try enqueue(TestSignal.sine(frequency: 1000, sampleRate: 22050, count: 22050, amplitude: 0.5), on: mono)
        let timeline = try mono.createTimeline()
        try mono.prime()
        try mono.start()
        try mono.stop(immediate: false)
        try run(device, cycles: 120, queues: [mono])
        #expect(!mono.isRunning && mono.underruns == 0)
        for channel in device.played {
            #expect(channel[23990..<24000].contains { $0 != 0 })
            #expect(channel[24000...].allSatisfy { $0 == 0 })
            let frequency = SignalMeasurement.frequency(of: Array(channel[500..<23500]), sampleRate: Self.mixRate)
            #expect(abs(frequency - 2000) < 0.5, "\(frequency) Hz")
        }
        #expect(abs(timeline.currentTime().sampleTime - 11025) < 1e-6, "\(timeline.currentTime().sampleTime)")
    }

    @Test("stop after queued on a 48 kHz output ends after exactly ⌈frames × 48000 ÷ (stream rate × play rate)⌉ output frames",
          arguments: [(44100.0, Float(1), 1000), (44100, 1, 441), (44100, 1, 4410), (44100, 1, 12345), (22050, 2, 1000), (44100, 1.5, 1000), (96000, 0.5, 3001)])
    func stopAfterQueuedIsExact(streamRate: Double, playRate: Float, frames: Int) throws {
        let device = try PlayedTap(channels: 2, capacity: 20000)
        let output = try AudioQueueOutput(device: device)
        let stream = try queue(rate: streamRate, channels: 1)
        defer { try? stream.dispose(immediate: true) }
        try stream.setOutput(output)
        if playRate != 1 {
            try stream.setTimePitchEnabled(true)
            try stream.setParameter(.playRate, playRate)
        }
        try enqueue([Float](repeating: 0.25, count: frames), on: stream)
        let timeline = try stream.createTimeline()
        try stream.prime()
        try stream.start()
        try stream.stop(immediate: false)
        try run(device, cycles: 70, queues: [stream])
        #expect(!stream.isRunning)
        #expect(stream.underruns == 0)
        // In integers: ⌈frames × 48000 ÷ (rate × play rate)⌉ (play rates here are multiples of 0.5).
        let denominator = Int(streamRate * Double(playRate) * 2)
        let expected = (frames * 96000 + denominator - 1) / denominator
        // The queue played exactly that many output frames (its time, in its own rate, converted back)…
        let played = timeline.currentTime().sampleTime * 48000 / streamRate
        #expect(abs(played - Double(expected)) < 1e-6, "played \(played) output frames, expected \(expected)")
        // … all but the last few with sound (libsoxr's drain may leave the last output or two of a
        // fast ratio to the stage's silent padding), and nothing after them.
        let left = device.played[0]
        #expect(left[..<(expected - 2)].allSatisfy { $0 != 0 })
        #expect(left[expected...].allSatisfy { $0 == 0 }, "sound at \(String(describing: left[expected...].firstIndex { $0 != 0 })), expected the end at \(expected)")
    }

    @Test("queue time is in the stream's rate: a start time of 4410 at 44.1 kHz begins at output frame 4800; translations agree")
    func startTimeInStreamFrames() throws {
        let device = try PlayedTap(channels: 2, capacity: 20000)
        let output = try AudioQueueOutput(device: device)
        let slow = try queue(rate: 44100, channels: 1)
        defer { try? slow.dispose(immediate: true) }
        try slow.setOutput(output)
        try enqueue([Float](repeating: 0.25, count: 4410), on: slow, startTime: 4410)
        try slow.prime()
        try slow.start()
        try slow.stop(immediate: false)
        try run(device, cycles: 50, queues: [slow])
        let left = device.played[0]
        let first = try #require(left.firstIndex { $0 != 0 })
        // The resampler's constant lag (under 2 stream frames) may delay the sound, never advance it.
        #expect(first >= 4800 && first <= 4802, "began at \(first)")
        #expect(left[9599] != 0 && left[9600...].allSatisfy { $0 == 0 })
        #expect(try slow.deviceSampleTime(forQueueSampleTime: 4410) == 4800)
        #expect(try slow.queueSampleTime(forDeviceSampleTime: 9600) == 8820)
    }

    @Test("a 44.1 kHz queue on a 48 kHz output: no heap call in the I/O cycles")
    func noAllocationOnTheRenderSide() throws {
        let device = try PlayedTap(channels: 2, capacity: 60000)
        let output = try AudioQueueOutput(device: device)
        let slow = try queue(rate: 44100, channels: 2), native = try queue(rate: 48000, channels: 2)
        defer { [slow, native].forEach { try? $0.dispose(immediate: true) } }
        try slow.setOutput(output)
        try native.setOutput(output)
        // Warm-up round, not counted (a first call may instantiate runtime metadata).
        for queue in [slow, native] {
            try enqueue([Float](repeating: 0.1, count: 2 * 400), on: queue)
            try queue.prime()
            try queue.start()
            try queue.stop(immediate: false)
        }
        try run(device, cycles: 6, queues: [slow, native])
        let warm = device.frames
        let sine = TestSignal.sine(frequency: 1000, sampleRate: 44100, count: 20000, amplitude: 0.5)
        for start in stride(from: 0, to: 20000, by: 5000) {
            try enqueue((start..<(start + 5000)).flatMap { [sine[$0], sine[$0]] }, on: slow)
        }
        try enqueue([Float](repeating: 0.25, count: 2 * 20000), on: native)
        for queue in [slow, native] {
            try queue.prime()
            try queue.start()
            try queue.stop(immediate: false)
        }
        device.countsAllocations = true
        try run(device, cycles: 100, queues: [slow, native])
        device.countsAllocations = false
        #expect(!slow.isRunning && !native.isRunning)
        #expect(device.allocations == 0, "\(device.allocations) heap calls in the I/O cycles")
        #expect(device.frames - warm >= 21769)
    }

    @Test("a 44.1 kHz queue on an I/O unit of its own (48 kHz device): the unit converts, the queue does not (1 kHz, queue time in stream frames)")
    func ownUnitConvertsOnce() throws {
        let device = try PlayedTap(channels: 2, capacity: 60000)
        let io = IOUnit()
        try io.setDevice(device)
        let slow = try queue(rate: 44100, channels: 2)
        defer { try? slow.dispose(immediate: true) }
        try slow.setOutputUnit(io)
        let sine = TestSignal.sine(frequency: 1000, sampleRate: 44100, count: 44100, amplitude: 0.5)
        try enqueue(sine.flatMap { [$0, $0] }, on: slow)
        let timeline = try slow.createTimeline()
        try slow.prime()
        try slow.start()
        try slow.stop(immediate: false)
        try run(device, cycles: 200, queues: [slow])
        #expect(!slow.isRunning && slow.underruns == 0)
        // The queue's own timeline runs at its rate: exactly its 44,100 frames.
        #expect(timeline.currentTime().sampleTime == 44100)
        let frequency = SignalMeasurement.frequency(of: Array(device.played[0][500..<47000]), sampleRate: Self.mixRate)
        #expect(abs(frequency - 1000) < 0.5, "\(frequency) Hz")
    }
}
