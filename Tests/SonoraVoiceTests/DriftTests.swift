#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import SonoraVoice

@Suite("Clock drift between loudspeaker and microphone")
struct DriftTests {
    /// `x` played on a clock `ppm` off: sample n of the result is x at n × (1 + ppm·10⁻⁶),
    /// read through a windowed sinc.
    static func resampled(_ x: [Float], ppm: Double) -> [Float] {
        let ratio = 1 + ppm * 1e-6
        return (0..<x.count).map { n in
            let position = Double(n) * ratio
            let whole = Int(position.rounded(.down))
            var sum = 0.0
            for j in -8...8 {
                let index = whole + j
                guard index >= 0, index < x.count else { continue }
                let t = position - Double(index)
                let sinc = abs(t) < 1e-9 ? 1 : sin(.pi * t) / (.pi * t)
                sum += Double(x[index]) * sinc * (0.5 + 0.5 * cos(.pi * t / 9))
            }
            return Float(sum)
        }
    }

    @Test("±100 ppm is measured to within 5 ppm; compensated, the linear filter cancels nearly as well as without drift", arguments: [100.0, -100.0, 0.0])
    func tracksDrift(ppm: Double) throws {
        let rate = 16000.0, seconds = 16.0
        let ref = VoiceTestSignals.talker(seconds: seconds, rate: rate, seed: 61, level: -24)
        let played = ppm == 0 ? ref : Self.resampled(ref, ppm: ppm)
        let echo = VoiceTestSignals.scaled(VoiceTestSignals.convolve(played, VoiceTestSignals.room(rt60: 0.15, delay: 0.04, rate: rate, seed: 62)), toRMSdB: -30)
        let mic = VoiceTestSignals.add(echo, VoiceTestSignals.noise(seconds: seconds, rate: rate, seed: 63, level: -65))
        var erle: [Bool: Double] = [:]
        for compensate in [true, false] {
            var configuration = EchoCancellerConfiguration(sampleRate: rate)
            configuration.driftCompensation = compensate
            // Judged on the linear filter: the suppressor would hide a misaligned filter.
            configuration.suppressionStrength = 0
            configuration.noiseSuppression = false
            let canceller = try EchoCanceller(configuration: configuration)
            let out = VoiceTestSignals.run(canceller, mic: mic, ref: ref, frame: 160)
            erle[compensate] = VoiceTestSignals.erle(mic: mic, out: out, echo: echo, noiseLevel: -65, rate: rate, from: 8)
            if compensate {
                // A faster loudspeaker clock (ppm > 0) makes the echo come earlier and earlier:
                // the echo's delay shrinks, which the canceller reports as negative drift.
                let measured = canceller.metrics.driftPPM
                print("voice: drift \(ppm) ppm measured \(measured) ppm")
                // The fine delay is interpolated from a ~0.2 s correlation (it was the ~1 s
                // one's parabola, which stuck to the 4 kHz lag grid: 20 ppm was its tolerance).
                #expect(abs(measured + ppm) < 5, "measured \(measured) ppm for \(ppm) ppm")
            }
        }
        let on = try #require(erle[true]), off = try #require(erle[false])
        print("voice: drift \(ppm) ppm linear ERLE \(on) dB compensated, \(off) dB not")
        if ppm == 0 {
            // No drift: nothing to compensate, and no invented slope moving the room.
            #expect(abs(on - off) < 0.5, "compensation on \(on) dB, off \(off) dB")
            #expect(on > 28, "linear ERLE without drift \(on) dB")
        } else {
            // The room the filter sees stands still once the slope is found (~1 s): the
            // linear filter ends within a few dB of the same room without drift (~32 dB).
            #expect(on > 26, "linear ERLE with \(ppm) ppm compensated: \(on) dB")
            #expect(on > off + 15)
        }
    }
}
