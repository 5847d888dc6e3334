import Foundation
import SonoraDSP
import SonoraTestSupport
import Testing

@Suite("Noise generator")
struct NoiseGeneratorTests {
    static func render(_ generator: inout NoiseGenerator, count: Int, amplitude: Float = 1, block: Int = 256) -> [Float] {
        TestSignal.rendered(count: count, block: block) { generator.render(into: $0, count: $1, amplitude: amplitude) }
    }

    @Test(arguments: [NoiseGenerator.Color.white, .pink])
    func sameSeedSameSamplesWhateverTheBlocks(_ color: NoiseGenerator.Color) {
        var a = NoiseGenerator(color: color, seed: 1234)
        var b = NoiseGenerator(color: color, seed: 1234)
        var c = NoiseGenerator(color: color, seed: 1235)
        let first = Self.render(&a, count: 5000, block: 256)
        #expect(Self.render(&b, count: 5000, block: 33) == first)
        let other = Self.render(&c, count: 5000)
        #expect(zip(first, other).filter { $0 == $1 }.count < 10)
    }

    @Test func whiteIsUniformInMinusOneToOne() {
        var generator = NoiseGenerator()
        let samples = Self.render(&generator, count: 200_000)
        #expect(samples.allSatisfy { $0 >= -1 && $0 < 1 })
        #expect(samples.min()! < -0.999 && samples.max()! > 0.999)
        #expect(abs(samples.reduce(0.0) { $0 + Double($1) } / 200_000) < 0.01)
        #expect(abs(SignalMeasurement.rms(samples) - 1 / 3.0.squareRoot()) < 0.005)
        // Quarters of the range are equally likely.
        for quarter in 0..<4 {
            let low = Float(quarter) / 2 - 1
            let share = Double(samples.filter { $0 >= low && $0 < low + 0.5 }.count) / 200_000
            #expect(abs(share - 0.25) < 0.01)
        }

        var zeroSeed = NoiseGenerator(seed: 0)
        let fromZero = Self.render(&zeroSeed, count: 1000, amplitude: 0.5)
        #expect(Set(fromZero).count > 990 && fromZero.allSatisfy { abs($0) <= 0.5 })
    }

    /// Power through a one-octave band-pass (Q √2) at `frequency`, in dB.
    static func bandPower(_ samples: [Float], at frequency: Double) -> Double {
        var filtered = samples
        var filter = Biquad(.bandPass(frequency: frequency, q: 2.0.squareRoot(), sampleRate: 48_000))
        filtered.withUnsafeMutableBufferPointer { filter.process($0.baseAddress!, count: $0.count) }
        return 20 * log10(SignalMeasurement.rms(filtered[4800...]))
    }

    @Test func pinkHasWhitesLevelAndFallsThreeDecibelsPerOctave() {
        var white = NoiseGenerator(color: .white, seed: 7)
        var pink = NoiseGenerator(color: .pink, seed: 7)
        let whiteSamples = Self.render(&white, count: 1 << 18, block: 4096)
        let pinkSamples = Self.render(&pink, count: 1 << 18, block: 4096)
        let levelDifference = 20 * log10(SignalMeasurement.rms(pinkSamples[4800...]) / SignalMeasurement.rms(whiteSamples))
        #expect(abs(levelDifference) < 1, "pink is \(levelDifference) dB from white")

        // Four octaves apart: equal power per octave for pink, 4 × 3 dB more for white.
        let pinkTilt = Self.bandPower(pinkSamples, at: 3200) - Self.bandPower(pinkSamples, at: 200)
        let whiteTilt = Self.bandPower(whiteSamples, at: 3200) - Self.bandPower(whiteSamples, at: 200)
        #expect(abs(pinkTilt) < 1, "pink tilt \(pinkTilt) dB")
        #expect(abs(whiteTilt - 12.04) < 1, "white tilt \(whiteTilt) dB")
    }
}
