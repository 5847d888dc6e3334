import Foundation
import SonoraDSP
import SonoraTestSupport
import Testing

@Suite("Sine oscillator")
struct SineOscillatorTests {
    static func render(_ oscillator: inout SineOscillator, count: Int, amplitude: Float = 1, block: Int = 512) -> [Float] {
        TestSignal.rendered(count: count, block: block) { oscillator.render(into: $0, count: $1, amplitude: amplitude) }
    }

    @Test(arguments: [50.0, 997.3, 6000, 15_001.5])
    func frequencyByZeroCrossings(_ frequency: Double) {
        var oscillator = SineOscillator(frequency: frequency, sampleRate: 48_000)
        let samples = Self.render(&oscillator, count: 48_000)
        let measured = SignalMeasurement.frequency(of: samples, sampleRate: 48_000)
        #expect(abs(measured - frequency) < 1e-3 * frequency, "measured \(measured)")
    }

    @Test func amplitudeAndStartingPhase() {
        var oscillator = SineOscillator(frequency: 1000, sampleRate: 48_000)
        let samples = Self.render(&oscillator, count: 4800, amplitude: 0.25)
        #expect(samples[0] == 0)
        #expect(abs(SignalMeasurement.amplitude(of: samples, frequency: 1000, sampleRate: 48_000) - 0.25) < 1e-6)
        #expect(samples.allSatisfy { abs($0) <= 0.25 })
        #expect(abs(SignalMeasurement.rms(samples) - 0.25 / 2.0.squareRoot()) < 1e-6)

        var cosine = SineOscillator(frequency: 1000, sampleRate: 48_000, phase: Double.pi / 2)
        let shifted = Self.render(&cosine, count: 12, amplitude: 0.5)
        #expect(shifted[0] == 0.5 && abs(shifted[12 - 1] - Float(0.5 * cos(2 * Double.pi * 11 / 48))) < 1e-6)
    }

    @Test func longRunsStayOnTheExactPhase() {
        // 997 Hz: the exact phase of sample n is (997·n mod 48000) / 48000 cycles.
        var oscillator = SineOscillator(frequency: 997, sampleRate: 48_000)
        let total = 2_000_000
        var block = [Float](repeating: 0, count: 4000)
        var rendered = 0
        var worst: Double = 0
        while rendered < total {
            block.withUnsafeMutableBufferPointer { oscillator.render(into: $0.baseAddress!, count: 4000, amplitude: 1) }
            if rendered + 4000 >= total - 48_000 {
                for (offset, sample) in block.enumerated() {
                    let n = rendered + offset
                    let exact = sin(2 * Double.pi * Double(997 * n % 48_000) / 48_000)
                    worst = max(worst, abs(Double(sample) - exact))
                }
            }
            rendered += 4000
        }
        #expect(worst < 1e-6)
    }

    @Test func changingFrequencyKeepsThePhaseContinuous() {
        var oscillator = SineOscillator(frequency: 500, sampleRate: 48_000)
        var samples = Self.render(&oscillator, count: 101)
        oscillator.frequency = 2000
        samples += Self.render(&oscillator, count: 200)
        // The largest step a 2 kHz sine at amplitude 1 can take in one sample.
        let maximumStep = Float(2 * sin(Double.pi * 2000 / 48_000))
        for n in 1..<samples.count {
            #expect(abs(samples[n] - samples[n - 1]) <= maximumStep + 1e-6)
        }
        let tail = Array(samples[101...])
        #expect(abs(SignalMeasurement.frequency(of: tail, sampleRate: 48_000) - 2000) < 2)
    }
}
