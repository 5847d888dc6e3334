import Foundation
import SonoraDSP
import SonoraTestSupport
import Testing

@Suite("Logarithmic sweep")
struct SweepTests {
    let rate = 48_000.0
    let start = 100.0, end = 8000.0
    let frames = 48_000

    func render(_ sweep: inout LogSweep, count: Int) -> [Float] {
        // Irregular blocks: 7, 22, 67, 202 …
        TestSignal.rendered(count: count, block: 7, nextBlock: { $0 * 3 % 1000 + 1 }) { sweep.render(into: $0, count: $1, amplitude: 0.8) }
    }

    @Test func sweepsExponentiallyFromStartToEndThenHolds() {
        var sweep = LogSweep(from: start, to: end, duration: frames, sampleRate: rate)
        #expect(abs(sweep.frequency - start) < 1e-9 && !sweep.isFinished)
        let samples = render(&sweep, count: frames + 24_000)
        #expect(sweep.isFinished && sweep.frequency == end)
        #expect(samples.allSatisfy { abs($0) <= 0.8 })

        // Rising crossing k happens where the phase reaches k cycles; for a per-sample ratio r
        // the phase at time t is inc₀·(rᵗ − 1)/(r − 1).
        let ratio = exp(log(end / start) / Double(frames))
        let increment = start / rate
        let sweepCrossings = SignalMeasurement.risingCrossings(Array(samples[..<frames]))
        for (index, time) in sweepCrossings.enumerated() {
            let expected = log(1 + Double(index + 1) * (ratio - 1) / increment) / log(ratio)
            #expect(abs(time - expected) < 0.05, "crossing \(index + 1)")
            if abs(time - expected) >= 0.05 { break }
        }
        let cycles = (end - start) * Double(frames) / (rate * log(end / start))
        #expect(abs(Double(sweepCrossings.count) - cycles) <= 1)

        // The start frequency, extrapolated from the first two cycles: near t = 0 the phase
        // (in cycles) is about a·t + c·t², with a = start / rate. Crossings 1 and 2 give a.
        let t1 = sweepCrossings[0], t2 = sweepCrossings[1]
        let curvature = (2 / t2 - 1 / t1) / (t2 - t1)
        let startMeasured = (1 / t1 - curvature * t1) * rate
        #expect(abs(startMeasured - start) < 0.005 * start, "start measured at \(startMeasured) Hz")
        // After the sweep, the end frequency exactly.
        let held = SignalMeasurement.frequency(of: Array(samples[(frames + 10)...]), sampleRate: rate)
        #expect(abs(held - end) < 1e-4 * end)
    }

    @Test func downwardAndDegenerateSweeps() {
        var down = LogSweep(from: 4000, to: 250, duration: 24_000, sampleRate: rate)
        let samples = render(&down, count: 48_000)
        let held = SignalMeasurement.frequency(of: Array(samples[24_000...]), sampleRate: rate)
        #expect(abs(held - 250) < 0.05)

        var instant = LogSweep(from: 100, to: 1000, duration: 0, sampleRate: rate)
        #expect(instant.isFinished && instant.frequency == 1000)
        let tone = render(&instant, count: 4800)
        #expect(abs(SignalMeasurement.amplitude(of: tone, frequency: 1000, sampleRate: rate) - 0.8) < 1e-5)

        let clamped = LogSweep(from: 0, to: 1e9, duration: 100, sampleRate: rate)
        #expect(clamped.startFrequency > 0 && clamped.endFrequency == rate / 2)
    }

    @Test func resetRestarts() {
        var sweep = LogSweep(from: start, to: end, duration: frames, sampleRate: rate)
        let first = render(&sweep, count: 5000)
        sweep.reset()
        #expect(render(&sweep, count: 5000) == first)
    }
}
