import Foundation
import SonoraDSP
import SonoraTestSupport
import Testing

@Suite("Level meter")
struct LevelMeterTests {
    static func measure(_ meter: inout LevelMeter, _ samples: [Float]) {
        samples.withUnsafeBufferPointer { meter.measure($0.baseAddress!, count: $0.count) }
    }

    @Test func silenceReadsTheFloor() {
        var meter = LevelMeter(sampleRate: 48_000)
        #expect(meter.averagePowerDB == -120 && meter.peakPowerDB == -120)
        Self.measure(&meter, [Float](repeating: 0, count: 64))
        #expect(meter.averagePowerDB == -120 && meter.peakPowerDB == -120)
    }

    /// The vector part keeps eight running maxima and reduces them by halves: the peak is
    /// found whichever lane (position mod 8) and sign it has, in the vector part or the tail.
    @Test(arguments: Array(0..<19))
    func peakInAnyLaneIsFound(position: Int) {
        for sign: Float in [1, -1] {
            var samples = (0..<19).map { Float($0 % 5) * 0.01 - 0.02 }
            samples[position] = 0.75 * sign
            var meter = LevelMeter(sampleRate: 48_000, averagingTime: 0, peakDecayTime: 0)
            Self.measure(&meter, samples)
            #expect(meter.peak == 0.75, "peak at \(position), sign \(sign): \(meter.peak)")
        }
    }

    @Test func zeroTimesReportTheLastBlockExactly() {
        var meter = LevelMeter(sampleRate: 48_000, averagingTime: 0, peakDecayTime: 0)
        // Mean square 0.25 → −6.0206 dB; peak 0.5 → −6.0206 dB. 37 samples: SIMD part and tail.
        Self.measure(&meter, (0..<37).map { $0 % 2 == 0 ? 0.5 : -0.5 })
        #expect(meter.meanSquare == 0.25 && meter.peak == 0.5)
        #expect(abs(meter.averagePowerDB - Float(10 * log10(0.25))) < 1e-5)
        #expect(abs(meter.peakPowerDB - Float(20 * log10(0.5))) < 1e-5)

        // Values 0.1, 0.2, 0.3, -0.4 (peak in the tail, negative): mean square 0.075.
        Self.measure(&meter, [0.1, 0.2, 0.3, 0, 0, 0, 0, 0, 0.1, 0.2, 0.3, -0.4])
        let squares: [Float] = [0.1, 0.2, 0.3, 0.1, 0.2, 0.3, 0.4].map { $0 * $0 }
        let meanSquare = squares.reduce(0.0) { $0 + Double($1) } / 12
        #expect(abs(meter.meanSquare - meanSquare) < 1e-9)
        #expect(meter.peak == Double(Float(0.4)))

        // A full-scale sine reads −3.01 dB.
        Self.measure(&meter, TestSignal.sine(frequency: 1000, sampleRate: 48_000, count: 4800))
        #expect(abs(meter.averagePowerDB + 3.0103) < 1e-3)
        #expect(abs(meter.peakPowerDB) < 1e-3)
    }

    @Test func smoothingFollowsTheOnePoleFormula() {
        let rate = 48_000.0, averaging = 0.1, decay = 0.5
        var meter = LevelMeter(sampleRate: rate, averagingTime: averaging, peakDecayTime: decay)
        let blocks: [(count: Int, value: Float)] = [(256, 0.5), (512, 0.1), (100, 0), (1024, 0.25), (64, 0)]
        var meanSquare = 0.0, peak = 0.0
        for block in blocks {
            Self.measure(&meter, [Float](repeating: block.value, count: block.count))
            let n = Double(block.count)
            let blockSquare = Double(block.value) * Double(block.value)
            meanSquare += (blockSquare - meanSquare) * (1 - exp(-n / (averaging * rate)))
            peak = max(Double(block.value), peak * exp(-n / (decay * rate)))
            #expect(abs(meter.meanSquare - meanSquare) < 1e-7 * meanSquare)
            #expect(abs(meter.peak - peak) < 1e-12)
            #expect(abs(meter.averagePowerDB - Float(10 * log10(meanSquare))) < 1e-4)
            #expect(abs(meter.peakPowerDB - Float(20 * log10(peak))) < 1e-4)
        }
        meter.reset()
        #expect(meter.averagePowerDB == -120 && meter.peakPowerDB == -120)
    }

    @Test func peakHoldsThroughQuieterBlocksWhileDecaying() {
        var meter = LevelMeter(sampleRate: 1000, averagingTime: 0, peakDecayTime: 1)
        Self.measure(&meter, [1])
        Self.measure(&meter, [Float](repeating: 0.1, count: 1000))
        // One time constant later the held peak is 1/e, still above the block's 0.1.
        #expect(abs(meter.peak - exp(-1)) < 1e-12)
        #expect(abs(meter.peakPowerDB - Float(20 * log10(exp(-1.0)))) < 1e-4)
        Self.measure(&meter, [Float](repeating: 0.1, count: 3000))
        #expect(meter.peak == Double(Float(0.1)))
    }
}
