import SonoraDSP
import Testing

@Suite("Drift compensation between two clocks")
struct DriftCompensatorTests {
    /// The source delivers `1 + ppm·10⁻⁶` frames per output frame in whole chunks of
    /// uneven size, as a second sound card would.
    func simulate(ppm: Double, periods: Int) -> (DriftCompensator, [Float]) {
        let period = 128
        let compensator = DriftCompensator(channelCount: 1, periodFrames: period, targetFill: 2.5 * Double(period))
        var produced = 0.0
        var sourceFrame = 0
        var output: [Float] = []
        var chunk = [Float](repeating: 0, count: 4096)
        var out = [Float](repeating: 0, count: period)
        for cycle in 0..<periods {
            produced += Double(period) * (1 + ppm * 1e-6)
            // Arrives in period-sized pieces, sometimes late by one period.
            var due = Int(produced) - sourceFrame
            if cycle % 7 == 3 { due = max(0, due - period) }
            if due > 0 {
                for index in 0..<due { chunk[index] = Float(sin(2 * Double.pi * 440 * Double(sourceFrame + index) / 48000)) }
                chunk.withUnsafeBufferPointer { buffer in compensator.write({ _ in buffer.baseAddress! }, frames: due) }
                sourceFrame += due
            }
            out.withUnsafeMutableBufferPointer { buffer in compensator.read(into: { _ in buffer.baseAddress! }, frames: period) }
            output += out
        }
        return (compensator, output)
    }

    @Test("converges on the drift and keeps the FIFO near its target", arguments: [-1000.0, -100, 0, 300, 2000])
    func converges(ppm: Double) {
        let (compensator, _) = simulate(ppm: ppm, periods: 6000)
        #expect(abs(compensator.driftPPM - ppm) < 20)
        #expect(abs(compensator.fill - compensator.targetFill) < Double(compensator.periodFrames) * 1.5)
        #expect(compensator.underflows == 0)
        #expect(compensator.overflows == 0)
    }

    @Test("the resampled signal stays clean: a sine comes out a sine")
    func signalQuality() {
        let (_, output) = simulate(ppm: 500, periods: 3000)
        // Fit each late sample against its neighbours: a pure sinusoid satisfies
        // x[n+1] + x[n−1] = 2cos(ω)x[n]; the residual measures distortion.
        let omega = 2 * Double.pi * 440 / 48000 / (1 + 500e-6)
        var residual = 0.0, energy = 0.0
        for index in 200_000..<(output.count - 1) {
            let predicted = 2 * cos(omega) * Double(output[index])
            let actual = Double(output[index + 1] + output[index - 1])
            residual += (actual - predicted) * (actual - predicted)
            energy += Double(output[index] * output[index])
        }
        let snr = 10 * log10(energy / residual)
        #expect(snr > 60)
    }
}

#if canImport(Glibc)
import Glibc
#endif
