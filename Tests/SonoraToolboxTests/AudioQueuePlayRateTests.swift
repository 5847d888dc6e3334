import Foundation
import SonoraCore
import SonoraTestSupport
import SonoraToolbox
import Testing

/// Play rate (kAudioQueueParam_PlayRate) with time-pitch enabled: varispeed through libsoxr on
/// the queue's thread, rendered offline. Lengths and end positions are in ring frames (the
/// queue's sample time) and exact; frequencies are measured from the output's zero crossings.
@Suite("AudioQueue play rate")
struct AudioQueuePlayRateTests {
    struct Played {
        var output: [Float]
        /// The queue's sample time when it stopped after its queued buffers (frames played).
        var playedFrames: Int
        var underruns: Int
        var queue: AudioQueue
    }

    /// Plays `samples` (mono, 48 kHz) in `bufferFrames`-frame buffers, at `rate` with
    /// time-pitch enabled (nil: disabled), then stops after the queued buffers.
    static func play(
        _ samples: [Float], rate: Float?, bufferFrames: Int = 4800, slice: Int = 1000,
        trims: [(start: Int, end: Int)] = [], events: [Int: [AudioQueueParameterEvent]] = [:],
        during: ((AudioQueue, Int) throws -> Void)? = nil
    ) throws -> Played {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        if let rate {
            try queue.setTimePitchEnabled(true)
            try queue.setParameter(.playRate, rate)
        }
        let timeline = try queue.createTimeline()
        var index = 0
        for start in stride(from: 0, to: samples.count, by: bufferFrames) {
            let chunk = Array(samples[start..<min(start + bufferFrames, samples.count)])
            let trim = index < trims.count ? trims[index] : (start: 0, end: 0)
            try enqueue(chunk, on: queue, trimStart: trim.start, trimEnd: trim.end, events: events[index] ?? [])
            index += 1
        }
        try queue.prime()
        try queue.start()
        try queue.stop(immediate: false)
        var output: [Float] = []
        var slices = 0
        while queue.isRunning && slices < 10_000 {
            try during?(queue, output.count)
            output += floats(try queue.offlineRender(frames: slice))
            slices += 1
        }
        let played = Int(timeline.currentTime().sampleTime)
        return Played(output: output, playedFrames: played, underruns: queue.underruns, queue: queue)
    }

    static let sine1k = TestSignal.sine(frequency: 1000, sampleRate: 48000, count: 48000, amplitude: 0.5)

    @Test("a 1 kHz sine at rate 2 plays as 2 kHz for exactly half the frames")
    func double() throws {
        let played = try Self.play(Self.sine1k, rate: 2)
        #expect(played.playedFrames == 24000)
        #expect(played.underruns == 0)
        let frequency = SignalMeasurement.frequency(of: Array(played.output[500..<23500]), sampleRate: 48000)
        #expect(abs(frequency - 2000) < 0.5, "measured \(frequency) Hz")
        #expect(played.output[24000...].allSatisfy { $0 == 0 })
        // Varispeed keeps the level (the filter passes 2 kHz untouched).
        let level = SignalMeasurement.amplitude(of: played.output[1000..<23000], frequency: 2000, sampleRate: 48000)
        #expect(abs(level - 0.5) < 0.01, "amplitude \(level)")
        try played.queue.dispose(immediate: true)
    }

    @Test("rate 0.5 plays twice as long an octave down")
    func half() throws {
        let played = try Self.play(Self.sine1k, rate: 0.5)
        #expect(played.playedFrames == 96000)
        #expect(played.underruns == 0)
        let frequency = SignalMeasurement.frequency(of: Array(played.output[500..<95500]), sampleRate: 48000)
        #expect(abs(frequency - 500) < 0.25, "measured \(frequency) Hz")
        #expect(played.output[96000...].allSatisfy { $0 == 0 })
        try played.queue.dispose(immediate: true)
    }

    @Test("rate 1 with time-pitch enabled is bit-exact with time-pitch disabled")
    func unity() throws {
        let noise = TestSignal.sine(frequency: 1234.5, sampleRate: 48000, count: 20011, amplitude: 0.7)
        let enabled = try Self.play(noise, rate: 1, bufferFrames: 3001, slice: 777)
        let disabled = try Self.play(noise, rate: nil, bufferFrames: 3001, slice: 777)
        #expect(enabled.playedFrames == 20011 && disabled.playedFrames == 20011)
        #expect(SignalMeasurement.firstMismatch(enabled.output, disabled.output) == nil)
        #expect(Array(enabled.output.prefix(20011)) == noise)
        try enabled.queue.dispose(immediate: true)
        try disabled.queue.dispose(immediate: true)
    }

    @Test("without time-pitch the rate is stored and has no effect, as in Core Audio")
    func rateWithoutTimePitch() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        try queue.setParameter(.playRate, 2)
        #expect(queue.parameter(.playRate) == 2)
        #expect(!queue.isTimePitchEnabled)
        let tone = Array(Self.sine1k.prefix(4000))
        try enqueue(tone, on: queue)
        try queue.prime()
        try queue.start()
        let output = floats(try queue.offlineRender(frames: 4000))
        #expect(output == tone)
    }

    @Test("stop after queued ends exactly after the last converted frame, trims in stream frames", arguments: [
        (Float(2), 4801, [(start: 0, end: 0)]), (Float(1.5), 4800, [(start: 2112, end: 0), (start: 0, end: 0), (start: 0, end: 701)]),
        (Float(0.5), 3333, [(start: 17, end: 5)]), (Float(0.75), 4801, [(start: 1, end: 0), (start: 0, end: 1)]),
    ])
    func exactEnd(rate: Float, bufferFrames: Int, trims: [(start: Int, end: Int)]) throws {
        let source = Array(Self.sine1k.prefix(3 * bufferFrames))
        let kept = source.count - trims.reduce(0) { $0 + $1.start + $1.end }
        let played = try Self.play(source, rate: rate, bufferFrames: bufferFrames, slice: 512, trims: trims)
        // Outputs whose stream position is below the end: ⌈kept / rate⌉.
        let expected = Int((Double(kept) / Double(rate)).rounded(.up))
        #expect(played.playedFrames == expected, "\(kept) stream frames at rate \(rate)")
        #expect(played.underruns == 0)
        #expect(played.output[expected...].allSatisfy { $0 == 0 })
        // The last converted frames carry the signal (the stream is not cut short).
        #expect(played.output[(expected - 64)..<expected].contains { abs($0) > 0.1 })
        try played.queue.dispose(immediate: true)
    }

    @Test("a buffer's parameter events apply at its first frame in ring frames")
    func eventAtRingFrame() throws {
        // DC, so the event's frame shows as a step; the second buffer starts at ring frame 2400.
        let dc = [Float](repeating: 0.5, count: 9600)
        let played = try Self.play(dc, rate: 2, bufferFrames: 4800, events: [1: [AudioQueueParameterEvent(.volume, 0)]])
        #expect(played.playedFrames == 4800)
        #expect(abs(played.output[2399] - 0.5) < 0.01, "\(played.output[2399])")
        #expect(played.output[2400..<4800].allSatisfy { $0 == 0 })
    }

    @Test("a buffer's play-rate event changes the rate from its first frame")
    func rateEvent() throws {
        let played = try Self.play(Self.sine1k, rate: 1, bufferFrames: 24000, events: [1: [AudioQueueParameterEvent(.playRate, 2)]])
        #expect(played.playedFrames == 24000 + 12000)
        let before = SignalMeasurement.frequency(of: Array(played.output[1000..<23000]), sampleRate: 48000)
        let after = SignalMeasurement.frequency(of: Array(played.output[25000..<35000]), sampleRate: 48000)
        #expect(abs(before - 1000) < 0.5 && abs(after - 2000) < 0.5, "\(before) Hz, then \(after) Hz")
        try played.queue.dispose(immediate: true)
    }

    @Test("a rate change while playing takes effect within the lookahead (2048 frames offline) and the filter")
    func changeWhilePlaying() throws {
        let changed = SendableBox(-1)
        let played = try Self.play(Self.sine1k, rate: 1, slice: 1000) { queue, rendered in
            if rendered == 12000 {
                try queue.setParameter(.playRate, 2)
                changed.value = rendered
            }
        }
        #expect(changed.value == 12000)
        #expect(played.underruns == 0)
        let before = SignalMeasurement.frequency(of: Array(played.output[1000..<13000]), sampleRate: 48000)
        let after = SignalMeasurement.frequency(of: Array(played.output[(12000 + 2048 + 256)..<(12000 + 8000)]), sampleRate: 48000)
        #expect(abs(before - 1000) < 0.5 && abs(after - 2000) < 0.5, "\(before) Hz, then \(after) Hz")
        // Every stream frame played once: what was left at the change plays in half the frames.
        #expect(played.playedFrames > 24000 && played.playedFrames < 48000)
        // The switch from copying to resampling is continuous (primed with the last frames):
        // no step larger than the 2 kHz sine's own largest step.
        let steps = zip(played.output[12000..<20000], played.output[12001..<20001]).map { abs($1 - $0) }
        let worst = steps.indices.max { steps[$0] < steps[$1] }!
        #expect(steps.max()! < Float(0.5 * 2 * Double.pi * 2000 / 48000) * 1.1, "largest step \(steps.max()!) at \(12000 + worst): \(played.output[(12000 + worst - 6)..<(12000 + worst + 6)])")
        try played.queue.dispose(immediate: true)
    }

    @Test("buffers come back only as the rate stage reaches them: nothing piles up inside the resampler")
    func noPileUp() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        try queue.setTimePitchEnabled(true)
        try queue.setParameter(.playRate, 1.5)
        let timeline = try queue.createTimeline()
        let tone = Array(Self.sine1k.prefix(1000))
        for _ in 0..<100 { try enqueue(tone, on: queue) }
        try queue.prime()
        try queue.start()
        var worst = 0.0
        for _ in 0..<80 {
            _ = try queue.offlineRender(frames: 512)
            // Stream frames handed back vs stream frames played: the ring's look-ahead
            // (2048 ring frames = 3072 stream frames), the buffer being fed and the filter's reach.
            let ahead = Double(recorder.count * 1000) - timeline.currentTime().sampleTime * 1.5
            worst = max(worst, ahead)
        }
        #expect(worst < 3072 + 1000 + 600, "buffers handed back \(worst) stream frames ahead of what played")
    }

    @Test("a start time leaves exact silence in ring frames, then the buffer plays from it")
    func startTimeGap() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        try queue.setTimePitchEnabled(true)
        try queue.setParameter(.playRate, 2)
        let dc = [Float](repeating: 0.5, count: 4001)
        try enqueue(dc, on: queue)
        try enqueue(dc, on: queue, startTime: 5000)
        try queue.prime()
        try queue.start()
        try queue.stop(immediate: false)
        let timeline = try queue.createTimeline()
        var output: [Float] = []
        while queue.isRunning && output.count < 100_000 { output += floats(try queue.offlineRender(frames: 700)) }
        // 4001 frames at rate 2: 2001 ring frames, silence to 5000, then 2001 more.
        #expect(timeline.currentTime().sampleTime == 7001)
        #expect(abs(output[1990] - 0.5) < 0.01 && output[2001..<5000].allSatisfy { $0 == 0 })
        // (A new segment: the filter starts from silence, so the first frames ring in.)
        #expect(output[5000] != 0 && abs(output[5100] - 0.5) < 0.01 && output[7001...].allSatisfy { $0 == 0 })
        #expect(queue.underruns == 0)
    }

    @Test("flush drains the rate stage too: every converted frame is in the ring")
    func flushDrains() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        try queue.setTimePitchEnabled(true)
        try queue.setParameter(.playRate, 2)
        try enqueue(Array(Self.sine1k.prefix(4800)), on: queue)
        try queue.prime()
        try queue.flush()
        try queue.start()
        let output = floats(try queue.offlineRender(frames: 2400))
        #expect(queue.underruns == 0)
        #expect(output[2300..<2400].contains { abs($0) > 0.1 })
        _ = try queue.offlineRender(frames: 1)
        #expect(queue.underruns == 1)
    }

    @Test("reset while playing at a rate drops what was converted; new buffers play at the rate from the next frame")
    func resetWhilePlaying() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        try queue.setTimePitchEnabled(true)
        try queue.setParameter(.playRate, 2)
        let timeline = try queue.createTimeline()
        try enqueue(Self.sine1k, on: queue)
        try queue.prime()
        try queue.start()
        _ = try queue.offlineRender(frames: 3000)
        try queue.reset()
        #expect(recorder.count == 1)
        try enqueue([Float](repeating: 0.25, count: 3001), on: queue)
        try queue.stop(immediate: false)
        var output: [Float] = []
        while queue.isRunning && output.count < 100_000 { output += floats(try queue.offlineRender(frames: 500)) }
        #expect(timeline.currentTime().sampleTime == 3000 + 1501)
        #expect(abs(output[100] - 0.25) < 0.01 && abs(output[1490] - 0.25) < 0.01)
        #expect(output[1501...].allSatisfy { $0 == 0 })
    }

    @Test("invalid rates and time-pitch settings fail with Core Audio's statuses, naming the value")
    func invalid() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        for rate: Float in [0.49, 2.01, 0, -1, 4, .nan, .infinity] {
            let error = #expect(throws: AudioError.self) { try queue.setParameter(.playRate, rate) }
            #expect(error?.code == .queueInvalidParameter)
            #expect(error?.message.contains("playRate \(rate)") == true, "\(error?.message ?? "")")
        }
        #expect(queue.parameter(.playRate) == 1)
        let buffer = try queue.allocateBuffer(byteCapacity: 400)
        buffer.fill(with: bytes([Float](repeating: 0, count: 100)))
        let eventError = #expect(throws: AudioError.self) {
            try queue.enqueue(buffer, parameterEvents: [AudioQueueParameterEvent(.playRate, 3)])
        }
        #expect(eventError?.code == .queueInvalidParameter)
        #expect(eventError?.message.contains("3.0") == true)

        let algorithm = #expect(throws: AudioError.self) { try queue.setTimePitchAlgorithm(.spectral) }
        #expect(algorithm?.code == .queueInvalidPropertyValue)
        #expect(algorithm?.message.contains("varispeed") == true)
        #expect(throws: AudioError.self) { try queue.setTimePitchAlgorithm(rawValue: 0x1234_5678) }
        try queue.setTimePitchAlgorithm(.varispeed)
        #expect(queue.timePitchAlgorithm == .varispeed)

        try queue.start()
        let running = #expect(throws: AudioError.self) { try queue.setTimePitchEnabled(true) }
        #expect(running?.code == .queueInvalidRunState)
        try queue.stop(immediate: true)
        try queue.setTimePitchEnabled(true)
        #expect(queue.isTimePitchEnabled)
    }

    @Test("the time-pitch properties call their listeners")
    func listeners() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        try queue.addPropertyListener(.enableTimePitch) { _, property in recorder.note("\(property)") }
        try queue.addPropertyListener(.timePitchAlgorithm) { _, property in recorder.note("\(property)") }
        try queue.setTimePitchEnabled(true)
        try queue.setTimePitchAlgorithm(.varispeed)
        let deadline = Date().addingTimeInterval(10)
        while recorder.notes.count < 2 && Date() < deadline { usleep(1000) }
        #expect(recorder.notes == ["enableTimePitch", "timePitchAlgorithm"])
    }
}
