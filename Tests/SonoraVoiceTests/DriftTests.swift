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

    @Test("±100 ppm is measured to within 20 ppm, and compensating it beats ignoring it", arguments: [100.0, -100.0])
    func tracksDrift(ppm: Double) throws {
        let rate = 16000.0, seconds = 16.0
        let ref = VoiceTestSignals.talker(seconds: seconds, rate: rate, seed: 61, level: -24)
        let played = Self.resampled(ref, ppm: ppm)
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
                #expect(abs(measured + ppm) < 20, "measured \(measured) ppm for \(ppm) ppm")
            }
        }
        let on = try #require(erle[true]), off = try #require(erle[false])
        print("voice: drift \(ppm) ppm linear ERLE \(on) dB compensated, \(off) dB not")
        #expect(on > off + 3)
    }
}
