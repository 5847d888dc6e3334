#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import SonoraUnits
import Synchronization
import Testing
@testable import SonoraVoice

/// Plays a signal into a unit's input, from the start, in whatever slices are asked.
final class SignalSource: RenderCallbackTarget, @unchecked Sendable {
    let signal: [Float]
    private(set) var position = 0
    init(_ signal: [Float]) { self.signal = signal }
    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let buffers = request.pointee.buffers
        let count = request.pointee.frameCount
        for channel in 0..<buffers.channelCount {
            let out = buffers.samples(channel)
            for n in 0..<count { out[n] = position + n < signal.count ? signal[position + n] : 0 }
        }
        position += count
        return .noError
    }
}

/// Wraps the in-process loopback so the "room" is a known filter in the loop: what the
/// unit plays comes back through the loopback (its round trip), then through a sparse
/// room impulse response plus noise, before the unit sees it as captured. Records the
/// microphone it hands over; counts the unit's heap calls on the cycles it is told to
/// (`countsAllocations`, from the scripted device).
final class RoomLoopDevice: ScriptedDevice, @unchecked Sendable {
    let taps: [(delay: Int, gain: Float)]
    private var history: [Float]
    private var historyIndex = 0
    private var noise = SeededGenerator(seed: 99)
    private(set) var microphone: [Float] = []

    init(period: Int, roundTrip: Int, taps: [(Int, Float)]) throws {
        self.taps = taps.map { (delay: $0.0, gain: $0.1) }
        history = [Float](repeating: 0, count: 4096)
        try super.init(
            configuration: AudioDeviceConfiguration(sampleRate: 16000, periodFrames: period, inputChannels: 1, outputChannels: 1, realtimePriority: nil),
            inProcessLatency: roundTrip)
        microphone.reserveCapacity(16000 * 20)
    }

    override var driver: String { "room:" + inner.driver }

    override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        guard isRunning else { return 0 }
        let input = cycle.pointee.input.samples(0)
        let mask = history.count - 1
        for n in 0..<cycle.pointee.frameCount {
            history[historyIndex & mask] = input[n]
            var y: Float = 0
            for tap in taps { y += tap.gain * history[(historyIndex - tap.delay) & mask] }
            y += Float(noise.nextGaussian()) * 0.0005
            input[n] = y
            historyIndex += 1
        }
        microphone.append(contentsOf: UnsafeBufferPointer(start: input, count: cycle.pointee.frameCount))
        return super.process(cycle)
    }
}

/// Pulls the voice I/O unit's bus 1 every cycle from its input callback and keeps it.
final class CaptureRecorder: RenderCallbackTarget, @unchecked Sendable {
    unowned let unit: AudioUnit
    private(set) var samples: [Float] = []
    /// Channel 0 of the buffers the input callback was handed, where bus 1's render matched
    /// them sample for sample (a count of cycles where it did not is `mismatches`).
    let mismatches = Atomic<Int>(0)
    /// Frames recorded so far, for the test thread to poll while the I/O thread writes
    /// (`samples` itself is read only after the device stopped).
    let recorded = Atomic<Int>(0)
    /// Heap calls on the I/O thread between the cycles that reach `countFrom` and
    /// `countUntil` recorded frames (−1 until then; nil bounds: not counted).
    let allocations = Atomic<Int>(-1)
    var countFrom: Int?, countUntil: Int?
    private var counting = false
    let buffers: OwnedAudioBufferList
    /// Records up to `capacity` frames (reserved here: the I/O thread only appends).
    init(unit: AudioUnit, capacity: Int = 16000 * 20) {
        self.unit = unit
        buffers = try! OwnedAudioBufferList(channelCount: 1, frameCapacity: 4096)
        samples.reserveCapacity(capacity)
    }
    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let count = request.pointee.frameCount
        if let countFrom, !counting, samples.count >= countFrom, allocations.load(ordering: .relaxed) < 0 {
            AllocationCounter.begin()
            counting = true
        } else if let countUntil, counting, samples.count >= countUntil {
            allocations.store(AllocationCounter.end(), ordering: .relaxed)
            counting = false
        }
        var flags = RenderActionFlags()
        let status = unit.render(flags: &flags, timeStamp: request.pointee.timeStamp, bus: 1, frameCount: count, into: buffers.list(frameCount: count))
        guard status == .noError else { return status }
        let handed = request.pointee.buffers
        if handed.channelCount == 0 || memcmp(handed.samples(0), buffers.list.samples(0), count * MemoryLayout<Float>.size) != 0 {
            mismatches.add(1, ordering: .relaxed)
        }
        if samples.count + count <= samples.capacity {
            samples.append(contentsOf: UnsafeBufferPointer(start: buffers.list.samples(0), count: count))
            recorded.store(samples.count, ordering: .releasing)
        }
        return .noError
    }
}

@Suite("Voice-processing units", .serialized)
struct VoiceUnitTests {
    static func ratioDB(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>) -> Double {
        VoiceTestSignals.decibels(VoiceTestSignals.energy(a) / max(VoiceTestSignals.energy(b), 1e-30))
    }

    @Test("the I/O unit cancels the loop's echo end to end; bypass, strength and mute change while running; no heap calls per cycle")
    func voiceIOOnRoomLoop() throws {
        let period = 160, roundTrip = 3 * 160, rate = 16000
        // The room: direct path 15 ms after the loop's round trip, reflections to 90 ms.
        let room: [(Int, Float)] = [(240, 0.6), (277, -0.3), (341, 0.2), (490, -0.12), (757, 0.08), (1180, 0.05), (1440, -0.03)]
        let device = try RoomLoopDevice(period: period, roundTrip: roundTrip, taps: room)
        let unit = VoiceProcessingIOUnit()
        try unit.setStreamFormat(.canonical(sampleRate: 16000, channels: 1), scope: .input, element: 0)
        try unit.setStreamFormat(.canonical(sampleRate: 16000, channels: 1), scope: .output, element: 1)
        try unit.setDevice(device)
        let far = VoiceTestSignals.talker(seconds: 20, rate: 16000, seed: 31, level: -22)
        try unit.setRenderCallback(SignalSource(far), input: 0)
        let recorder = CaptureRecorder(unit: unit)
        try unit.setInputCallback(recorder)
        try unit.initialize()
        #expect(abs(unit.latency - Double(roundTrip + 256) / 16000) < 1e-9)
        try unit.start()
        #expect(unit.isRunning)
        let cyclesPerSecond = rate / period

        // 1. Converge for 6 s; cancellation over the last 3 s, counting heap calls on 2 s of it.
        try device.run(cycles: 4 * cyclesPerSecond)
        device.countsAllocations = true
        try device.run(cycles: 2 * cyclesPerSecond)
        device.countsAllocations = false
        #expect(device.allocations == 0)
        let cancelled = Self.ratioDB(device.microphone[(3 * rate)..<(6 * rate)], recorder.samples[(3 * rate)..<(6 * rate)])
        print("voice: VPIO on the room loop, ERLE \(cancelled) dB")
        #expect(cancelled > 12)
        let delay = try unit.parameter(VoiceProcessingParameter.estimatedDelay)
        #expect(abs(delay - 0.015) < 0.001, "estimated delay \(delay) s")
        #expect(try unit.parameter(VoiceProcessingParameter.erle) > 10)
        // A steady room is not an echo path change.
        #expect(try unit.parameter(VoiceProcessingParameter.echoPathChanges) == 0)

        // 2. Bypass (as Core Audio's property) while running: the capture passes untouched.
        try unit.setProperty(.bypassVoiceProcessing, scope: .global, element: 0, to: .flag(true))
        try device.run(cycles: cyclesPerSecond)
        let bypassed = Self.ratioDB(device.microphone[(6 * rate + 800)..<(7 * rate)], recorder.samples[(6 * rate + 800)..<(7 * rate)])
        #expect(abs(bypassed) < 1, "bypassed ratio \(bypassed) dB")

        // 3. Back on, at full suppression strength: cancelling again at once (the filter kept learning).
        try unit.setProperty(.bypassVoiceProcessing, scope: .global, element: 0, to: .flag(false))
        try unit.setParameter(VoiceProcessingParameter.suppressionStrength, to: 1)
        try device.run(cycles: cyclesPerSecond)
        let resumed = Self.ratioDB(device.microphone[(7 * rate + 800)..<(8 * rate)], recorder.samples[(7 * rate + 800)..<(8 * rate)])
        print("voice: VPIO bypassed \(bypassed) dB, resumed at strength 1 \(resumed) dB")
        #expect(resumed > 15, "after bypass, \(resumed) dB")

        // 4. Mute output: nothing is played, so nothing comes back but the room's noise.
        try unit.setProperty(.muteOutput, scope: .global, element: 0, to: .flag(true))
        try device.run(cycles: cyclesPerSecond)
        let heard = VoiceTestSignals.energy(device.microphone[(8 * rate + 2000)..<(9 * rate)]) / Double(rate - 2000)
        #expect(VoiceTestSignals.decibels(heard) < -60, "muted loop still hears \(VoiceTestSignals.decibels(heard)) dB")

        // 5. The input callback is handed the cancelled capture itself (what bus 1 renders),
        // not the raw microphone, in every cycle.
        #expect(recorder.mismatches.load(ordering: .relaxed) == 0)

        // 6. Fade-out (the I/O unit's, inherited): unmuted, then ramped to silence over 50 ms.
        try unit.setProperty(.muteOutput, scope: .global, element: 0, to: .flag(false))
        try device.run(cycles: cyclesPerSecond)
        unit.fadeOut(frames: 800)
        try device.run(cycles: 10)
        #expect(unit.isFadedOut)
        try device.run(cycles: cyclesPerSecond / 2)
        let faded = VoiceTestSignals.energy(device.microphone[(10 * rate + 2000)..<(10 * rate + 8000)]) / 6000
        #expect(VoiceTestSignals.decibels(faded) < -60, "faded-out loop still hears \(VoiceTestSignals.decibels(faded)) dB")
        unit.stop()
        unit.uninitialize()
    }

    @Test("the voice processor effect cancels its reference input offline and mirrors Core Audio's properties")
    func processorEffect() throws {
        let rate = 16000.0
        let ref = VoiceTestSignals.talker(seconds: 8, rate: rate, seed: 41, level: -24)
        let echo = VoiceTestSignals.scaled(VoiceTestSignals.convolve(ref, VoiceTestSignals.room(rt60: 0.2, delay: 0.05, rate: rate, seed: 42)), toRMSdB: -30)
        let mic = VoiceTestSignals.add(echo, VoiceTestSignals.noise(seconds: 8, rate: rate, seed: 43, level: -65))
        let unit = VoiceProcessorUnit()
        for element in 0..<2 { try unit.setStreamFormat(.canonical(sampleRate: rate, channels: 1), scope: .input, element: element) }
        try unit.setStreamFormat(.canonical(sampleRate: rate, channels: 1), scope: .output, element: 0)
        try unit.setRenderCallback(SignalSource(mic), input: 0)
        try unit.setRenderCallback(SignalSource(ref), input: 1)
        try unit.initialize()
        #expect(unit.latency == 256 / rate)
        var out: [Float] = []
        let buffers = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 160)
        for slice in 0..<(mic.count / 160) {
            var flags = RenderActionFlags()
            let status = unit.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(slice * 160)), bus: 0, frameCount: 160, into: buffers.list(frameCount: 160))
            #expect(status == .noError)
            out.append(contentsOf: buffers.list.samples(0).withMemoryRebound(to: Float.self, capacity: 160) { Array(UnsafeBufferPointer(start: $0, count: 160)) })
        }
        let aligned = Array(out.dropFirst(256)) + [Float](repeating: 0, count: 256)
        let erle = VoiceTestSignals.erle(mic: mic, out: aligned, echo: echo, noiseLevel: -65, rate: rate, from: 4)
        print("voice: processor effect ERLE \(erle) dB")
        #expect(erle > 20)
        #expect(abs(try unit.parameter(VoiceProcessingParameter.estimatedDelay) - 0.05) < 0.001)
        try unit.setProperty(.voiceProcessingEnableAGC, scope: .global, element: 0, to: .flag(true))
        #expect(try unit.parameter(VoiceProcessingParameter.automaticGainControl) == 1)
        if case .flag(let on) = try unit.property(.voiceProcessingEnableAGC, scope: .global, element: 0) { #expect(on) } else { Issue.record("AGC is not a flag") }
        #expect(throws: AudioError.self) { try unit.setParameter(VoiceProcessingParameter.erle, to: 3) }
        unit.uninitialize()
    }

    @Test("a microphone and reference at different rates are refused, naming both")
    func rateMismatch() throws {
        let unit = VoiceProcessorUnit()
        try unit.setStreamFormat(.canonical(sampleRate: 16000, channels: 1), scope: .input, element: 0)
        try unit.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .input, element: 1)
        #expect { try unit.initialize() } throws: { error in
            let message = (error as? AudioError)?.message ?? ""
            return message.contains("16000") && message.contains("48000")
        }
    }
}
