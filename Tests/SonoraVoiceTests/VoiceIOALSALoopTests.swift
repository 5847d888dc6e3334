import SonoraTestSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import SonoraHAL
import SonoraUnits
import Testing
@testable import SonoraVoice

/// The voice I/O unit heading a graph on a real ALSA device: Sonora's `sonoraloop` plugin,
/// whose capture PCM carries a known room (taps after the loop's exact round trip) and a
/// noise floor. The unit is told nothing about the room: the echo of what it plays comes
/// back through ALSA and must be cancelled end to end, while bypass, suppression strength
/// and mute change under it.
@Suite("Voice I/O unit on the sonoraloop ALSA plugin with a room in the loop", .serialized,
       .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct VoiceIOALSALoopTests {
    static let periods = 3
    /// Direct path 15 ms after the round trip, reflections to 90 ms (taps at 16 kHz).
    static let taps16k: [(delay: Int, gain: Float)] = [(240, 0.6), (277, -0.3), (341, 0.2), (490, -0.12), (757, 0.08), (1180, 0.05), (1440, -0.03)]
    /// The same room at `rate`.
    static func taps(rate: Int) -> [(delay: Int, gain: Float)] { taps16k.map { ($0.delay * rate / 16000, $0.gain) } }
    static func configuration(rate: Int) -> String {
        let room = taps(rate: rate).map { "\($0.delay):\($0.gain)" }.joined(separator: " ")
        return """
        pcm.voiceroom_capture { type sonoraloop loop "voiceroom" format "FLOAT_LE" room "\(room)" noise_db -70 }
        pcm.voiceroom_playback { type sonoraloop loop "voiceroom" format "FLOAT_LE" }
        """
    }

    /// What the room returns of `played` (before the noise), frame for frame of capture.
    static func echo(of played: [Float], roundTrip: Int, count: Int, rate: Int) -> [Float] {
        let taps = Self.taps(rate: rate)
        var echo = [Float](repeating: 0, count: count)
        for n in 0..<count {
            var sum: Float = 0
            for tap in taps {
                let index = n - roundTrip - tap.delay
                if index >= 0 && index < played.count { sum += tap.gain * played[index] }
            }
            echo[n] = sum
        }
        return echo
    }

    /// Waits (polling, no timing asserted) until the recorder holds `frames`.
    static func wait(for frames: Int, _ recorder: CaptureRecorder, limit: Double = 30) -> Bool {
        let deadline = HostTime.now.seconds + limit
        while recorder.recorded.load(ordering: .acquiring) < frames {
            if HostTime.now.seconds > deadline { return false }
            usleep(20000)
        }
        return true
    }

    @Test("the room's echo is cancelled end to end; the delay is found; bypass, strength and mute change while running",
          arguments: [16000, 48000])
    func cancelsThroughALSA(rate: Int) throws {
        let period = rate / 100  // 10 ms
        let device = try ALSADevice(
            capture: "voiceroom_capture", playback: "voiceroom_playback",
            configuration: AudioDeviceConfiguration(sampleRate: rate, periodFrames: period, periods: Self.periods,
                                                    inputChannels: 1, outputChannels: 1, realtimePriority: 60),
            alsaConfiguration: Self.configuration(rate: rate))
        let graph = AudioGraph()
        let unit = VoiceProcessingIOUnit()
        try unit.setStreamFormat(.canonical(sampleRate: Double(rate), channels: 1), scope: .input, element: 0)
        try unit.setStreamFormat(.canonical(sampleRate: Double(rate), channels: 1), scope: .output, element: 1)
        try unit.setDevice(device)
        let node = graph.addNode(unit)
        let far = VoiceTestSignals.talker(seconds: 14, rate: Double(rate), seed: 71, level: -22)
        try graph.setRenderCallback(SignalSource(far), node: node, input: 0)
        let recorder = CaptureRecorder(unit: unit, capacity: rate * 20)
        // Heap calls on the I/O thread over seconds 4–6 of the run (whole cycles: ALSA,
        // the canceller, the graph).
        recorder.countFrom = 4 * rate
        recorder.countUntil = 6 * rate
        try unit.setInputCallback(recorder)
        try graph.initialize()
        // The loop's round trip is exactly its buffer; the unit adds its canceller's latency.
        let roundTrip = period * Self.periods
        try graph.start()
        defer { graph.stop(); graph.uninitialize() }
        #expect(unit.isRunning)

        // 1. Six seconds to converge; cancellation judged over the last three.
        #expect(Self.wait(for: 6 * rate, recorder))
        let converged = recorder.recorded.load(ordering: .acquiring)
        let delay = try unit.parameter(VoiceProcessingParameter.estimatedDelay)
        // 2. Bypass while running: the echo comes back.
        try unit.setProperty(.bypassVoiceProcessing, scope: .global, element: 0, to: .flag(true))
        let bypassFrom = recorder.recorded.load(ordering: .acquiring) + rate / 4
        #expect(Self.wait(for: bypassFrom + rate, recorder))
        // 3. Back on at full strength: cancelling again (the filter kept learning meanwhile).
        try unit.setProperty(.bypassVoiceProcessing, scope: .global, element: 0, to: .flag(false))
        try unit.setParameter(VoiceProcessingParameter.suppressionStrength, to: 1)
        let resumedFrom = recorder.recorded.load(ordering: .acquiring) + rate / 4
        #expect(Self.wait(for: resumedFrom + rate, recorder))
        // 4. Mute output: nothing is played, so only the room's noise comes back.
        try unit.setProperty(.muteOutput, scope: .global, element: 0, to: .flag(true))
        let mutedFrom = recorder.recorded.load(ordering: .acquiring) + rate / 4
        #expect(Self.wait(for: mutedFrom + rate / 2, recorder))
        graph.stop()
        #expect(!unit.isRunning)

        let heard = recorder.samples
        // The recorder's frame n is capture frame n − (the canceller's latency) — the unit
        // reports both; the echo energy over a window barely depends on a few ms of it.
        let latency = Int((unit.latency * Double(rate)).rounded()) - roundTrip
        let echo = Self.echo(of: far, roundTrip: roundTrip, count: heard.count, rate: rate)
        func ratio(_ range: Range<Int>) -> Double {
            VoiceTestSignals.decibels(VoiceTestSignals.energy(echo[(range.lowerBound - latency)..<(range.upperBound - latency)])
                                      / max(VoiceTestSignals.energy(heard[range]), 1e-30))
        }
        let cancelled = ratio((converged - 3 * rate)..<converged)
        let bypassed = ratio(bypassFrom..<(bypassFrom + rate))
        let resumed = ratio(resumedFrom..<(resumedFrom + rate))
        let muted = VoiceTestSignals.decibels(VoiceTestSignals.energy(heard[mutedFrom..<(mutedFrom + rate / 2)]) / Double(rate / 2))
        let statistics = device.statistics
        print("voice: VPIO on sonoraloop with a room at \(rate) Hz: ERLE \(cancelled) dB, delay \(delay) s, bypassed \(bypassed) dB, resumed at strength 1 \(resumed) dB, muted \(muted) dBFS, xruns \(statistics.xruns), heap calls on the I/O thread over 2 s \(recorder.allocations.load(ordering: .relaxed))")
        // The round trip is declared by the driver, so the estimator sees only the room: 15 ms.
        #expect(abs(delay - 0.015) < 0.002, "estimated delay \(delay) s")
        #expect(cancelled > 20, "end-to-end ERLE \(cancelled) dB")
        #expect(abs(bypassed) < 3, "bypassed: echo over output \(bypassed) dB")
        #expect(resumed > 20, "after bypass at strength 1: \(resumed) dB")
        #expect(muted < -60, "muted output still hears \(muted) dBFS")
        #expect(statistics.renderErrors == 0)
        if AllocationCounter.isAvailable {
            #expect(recorder.allocations.load(ordering: .relaxed) == 0, "heap calls on the I/O thread: \(recorder.allocations.load(ordering: .relaxed))")
        }
    }

    @Test("a malformed room is refused when the PCM opens")
    func malformedRoom() {
        for room in ["240:0.6 277", "abc:1", "240:0.6 300:99"] {
            let configuration = #"pcm.badroom { type sonoraloop loop "badroom" format "FLOAT_LE" room "\#(room)" }"#
            #expect(throws: AudioError.self, "room \(room)") {
                _ = try ALSADevice(capture: "badroom", playback: "sonoraloop:badroom",
                                   configuration: AudioDeviceConfiguration(sampleRate: 16000, periodFrames: 160, inputChannels: 1, outputChannels: 1, realtimePriority: nil),
                                   alsaConfiguration: configuration)
            }
        }
    }
}
