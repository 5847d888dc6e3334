import SonoraTestSupport
import Testing

@Suite struct SignalTests {
    @Test("a full-scale sine measures −3.01 dBFS RMS and 0 dBFS peak; its amplitude and frequency are found")
    func sineLevels() {
        let sine = TestSignal.sine(frequency: 1000, sampleRate: 48000, count: 4800)
        #expect(abs(SignalMeasurement.rmsDBFS(sine) + 3.0103) < 0.001)
        #expect(abs(SignalMeasurement.peakDBFS(sine)) < 0.001)
        #expect(abs(SignalMeasurement.amplitude(of: sine, frequency: 1000, sampleRate: 48000) - 1) < 1e-6)
        #expect(abs(SignalMeasurement.frequency(of: sine, sampleRate: 48000) - 1000) < 0.01)
    }

    @Test("correlation and SNR: same, inverted, noisy")
    func correlationAndSNR() {
        let noise = TestSignal.gaussianNoise(count: 48000, seed: 3)
        #expect(abs(SignalMeasurement.rms(noise) - 1) < 0.02)
        #expect(abs(SignalMeasurement.correlation(noise, noise) - 1) < 1e-9)
        #expect(abs(SignalMeasurement.correlation(noise, noise.map { -$0 }) + 1) < 1e-9)
        let quiet = TestSignal.gaussianNoise(count: 48000, seed: 4, deviation: 0.01)
        #expect(abs(SignalMeasurement.snr(reference: noise, test: TestSignal.sum(noise, quiet)) - 40) < 0.5)
        #expect(SignalMeasurement.snr(reference: noise, test: noise) > 290)
    }

    @Test("impulse, white noise, quantized values and block-wise rendering")
    func generators() {
        let impulse = TestSignal.impulse(count: 10, at: 3, amplitude: 0.5)
        #expect(impulse.enumerated().allSatisfy { $0.element == ($0.offset == 3 ? 0.5 : 0) })
        #expect(SignalMeasurement.peak(TestSignal.whiteNoise(count: 1000, seed: 1, amplitude: 0.1)) <= 0.1)
        #expect(TestSignal.whiteNoise(count: 100, seed: 9) == TestSignal.whiteNoise(count: 100, seed: 9))
        let values = TestSignal.quantized(count: 1000, bits: 16)
        #expect(values.allSatisfy { $0 != 0 && ($0 * 32768).rounded() == $0 * 32768 })
        var written = 0
        let ramp = TestSignal.rendered(count: 100, block: 7, nextBlock: { $0 + 1 }) { destination, frames in
            for n in 0..<frames { destination[n] = Float(written + n) }
            written += frames
        }
        #expect(ramp == (0..<100).map(Float.init))
    }
}
