import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

@Suite("3D mixer: playback rate")
struct Mixer3DRateTests {
    /// Renders a 1 kHz tone at `rate` (set after `lead` cycles at rate 1) and returns the
    /// left channel from `skip` cycles on, with the frames the source was asked for.
    func render(rate: Float, lead: Int = 0, cycles: Int = 40, frames: Int = 512) throws -> (samples: [Float], pulled: Int, pulledHalfway: Int) {
        let unit = try makeMixer3D(maximumFrames: max(frames, 512))
        let source = Mixer3DToneSource(frequency: 1000)
        try unit.setRenderCallback(RenderCallback(source), input: 0)
        try unit.setParameter(Mixer3DUnit.Parameter.azimuth, scope: .input, element: 0, to: -90)
        try unit.initialize()
        var left: [Float] = []
        var halfway = 0
        for cycle in 0..<cycles {
            if cycle == cycles / 2 { halfway = source.framesServed }
            if cycle == lead { try unit.setParameter(Mixer3DUnit.Parameter.playbackRate, scope: .input, element: 0, to: rate) }
            left += try renderFrames(unit, frames: frames, sampleTime: Double(cycle * frames))[0]
        }
        return (left, source.framesServed, halfway)
    }

    @Test(arguments: [2.0, 0.5, 1.25] as [Float])
    func rateScalesTheFrequency(rate: Float) throws {
        let (samples, pulled, halfway) = try render(rate: rate)
        let measured = SignalMeasurement.frequency(of: Array(samples[4096...]), sampleRate: 48000)
        #expect(abs(measured / (1000 * Double(rate)) - 1) < 1e-3, "rate \(rate): \(measured) Hz")
        // The input is pulled for what the rate needs: over the second half exactly rate × frames
        // (to a frame or so); ahead of that only by the resampler's look-ahead, which does not grow.
        let secondHalf = Double(samples.count / 2) * Double(rate)
        #expect(abs(Double(pulled - halfway) - secondHalf) <= 2, "pulled \(pulled - halfway) frames for \(secondHalf)")
        #expect(Double(pulled) - Double(samples.count) * Double(rate) < 1024, "pulled \(pulled) frames for \(samples.count) at \(rate)")
    }

    /// Long slices at a slow rate: libsoxr hands out a slice's output over several calls
    /// while holding the input it took; the stage must ask again rather than give up (it
    /// rendered 1,024 frames of each 4,096 and silence after: OpenAL at pitch 0.5 on a
    /// loopback device, 70 % off in pitch).
    @Test(arguments: [0.5, 0.8] as [Float])
    func slowRatesFillLongSlices(rate: Float) throws {
        let (samples, _, _) = try render(rate: rate, cycles: 8, frames: 4096)
        var run = 0, longest = 0
        for sample in samples[4096...] {
            run = abs(sample) < 0.01 ? run + 1 : 0
            longest = max(longest, run)
        }
        #expect(longest < 8, "rate \(rate): \(longest) silent samples in a row")
        let measured = SignalMeasurement.frequency(of: Array(samples[4096...]), sampleRate: 48000)
        #expect(abs(measured / (1000 * Double(rate)) - 1) < 1e-3, "rate \(rate): \(measured) Hz")
    }

    /// Rate 2 halves a tone's period; rate 1 pulls exactly the frames rendered.
    @Test func rateTwoHalvesThePeriod() throws {
        let plain = try render(rate: 1)
        #expect(plain.pulled == plain.samples.count)
        let fast = try render(rate: 2)
        let periodPlain = 1 / SignalMeasurement.frequency(of: Array(plain.samples[4096...]), sampleRate: 48000)
        let periodFast = 1 / SignalMeasurement.frequency(of: Array(fast.samples[4096...]), sampleRate: 48000)
        #expect(abs(periodFast / periodPlain - 0.5) < 1e-3)
    }

    /// A switch from rate 1 mid-stream keeps the tone (no gap of silence, no burst).
    @Test func switchingRateMidStreamKeepsTheSignal() throws {
        let (samples, _, _) = try render(rate: 1.5, lead: 10)
        let around = Array(samples[(10 * 512 - 256)..<(10 * 512 + 2048)])
        #expect(SignalMeasurement.peak(around) < 0.52)
        // No run of near-silence longer than a quarter period of the faster tone.
        var run = 0, longest = 0
        for sample in around {
            run = abs(sample) < 0.05 ? run + 1 : 0
            longest = max(longest, run)
        }
        #expect(longest < 12, "\(longest) quiet samples after the switch")
        let after = SignalMeasurement.frequency(of: Array(samples[(12 * 512)...]), sampleRate: 48000)
        #expect(abs(after / 1500 - 1) < 1e-3)
    }
}
