import SonoraDSP
import SonoraTestSupport
import Testing

@Suite("FFT, maximum-length sequences and the delay estimator")
struct DelayEstimatorTests {
    @Test("FFT round trip and a known spectrum")
    func fftRoundTrip() {
        let fft = FFT(size: 64)
        var real = (0..<64).map { Float(sin(2 * Double.pi * 5 * Double($0) / 64)) }
        let original = real
        var imaginary = [Float](repeating: 0, count: 64)
        fft.forward(real: &real, imaginary: &imaginary)
        // A sine at bin 5: energy at bins 5 and 59 only, magnitude N/2.
        let magnitudes = (0..<64).map { (real[$0] * real[$0] + imaginary[$0] * imaginary[$0]).squareRoot() }
        #expect(abs(magnitudes[5] - 32) < 1e-3 && abs(magnitudes[59] - 32) < 1e-3)
        #expect(magnitudes.enumerated().filter { $0.offset != 5 && $0.offset != 59 }.allSatisfy { $0.element < 1e-3 })
        fft.inverse(real: &real, imaginary: &imaginary)
        #expect(zip(real, original).allSatisfy { abs($0 - $1) < 1e-5 })
    }

    @Test("an MLS has 2ⁿ−1 values, balanced, with a flat circular autocorrelation", arguments: [8, 10, 13])
    func mlsProperties(order: Int) {
        let sequence = MaximumLengthSequence.values(order: order)
        #expect(sequence.count == (1 << order) - 1)
        #expect(sequence.reduce(0, +) == 1)  // one more +1 than −1
        for lag in [1, 7, 100] {
            let correlation = (0..<sequence.count).reduce(Float(0)) { $0 + sequence[$1] * sequence[($1 + lag) % sequence.count] }
            #expect(correlation == -1)
        }
    }

    @Test("finds an integer delay exactly, an inverted copy, a fractional one closely, and refuses noise")
    func estimates() {
        let signal = MaximumLengthSequence.values(order: 10)
        var recording = [Float](repeating: 0, count: 4000)
        for (index, value) in signal.enumerated() { recording[777 + index] = 0.5 * value }
        let exact = DelayEstimator.estimate(signal: signal, in: recording, maximumDelay: 2500)
        #expect(abs((exact?.frames ?? 0) - 777) < 1e-6)
        #expect(exact?.isInverted == false)
        #expect(abs((exact?.gain ?? 0) - 0.5) < 1e-4)

        let inverted = recording.map { -$0 }
        #expect(DelayEstimator.estimate(signal: signal, in: inverted, maximumDelay: 2500)?.isInverted == true)

        // Half a sample: the average of the copies at 300 and 301.
        var half = [Float](repeating: 0, count: 4000)
        for (index, value) in signal.enumerated() {
            half[300 + index] += 0.5 * value
            half[301 + index] += 0.5 * value
        }
        let fractional = DelayEstimator.estimate(signal: signal, in: half, maximumDelay: 2500)?.frames ?? 0
        #expect(abs(fractional - 300.5) < 0.05)

        let noise = TestSignal.whiteNoise(count: 4000, seed: 1, amplitude: 0.1)
        #expect(DelayEstimator.estimate(signal: signal, in: noise, maximumDelay: 2500) == nil)
        #expect(DelayEstimator.estimate(signal: signal, in: [Float](repeating: 0, count: 4000), maximumDelay: 2500) == nil)
        // Beyond the search range.
        #expect(DelayEstimator.estimate(signal: signal, in: recording, maximumDelay: 500) == nil)
    }
}

#if canImport(Glibc)
import Glibc
#endif
