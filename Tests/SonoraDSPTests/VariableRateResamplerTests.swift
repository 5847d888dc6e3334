import SonoraCore
import SonoraDSP
import SonoraTestSupport
import Testing

/// libsoxr's variable-rate mode as the audio queue's play rate uses it: output counts, and a
/// new ratio applying from the next output taken (what the queue's position mapping relies on).
@Suite("VariableRateResampler")
struct VariableRateResamplerTests {
    /// Feeds `input` (mono) in 1000-frame pieces, taking at most `take` outputs per call; calls
    /// `before` with the outputs taken so far before each call; drains at the end.
    func run(_ input: [Float], _ resampler: VariableRateResampler, take: Int = 1 << 20, before: (Int) throws -> Void = { _ in }) throws -> [Float] {
        var output: [Float] = []
        var sink = [Float](repeating: 0, count: 1 << 16)
        var fed = 0
        while fed < input.count {
            try before(output.count)
            let piece = min(1000, input.count - fed)
            let (consumed, made) = input.withUnsafeBufferPointer { source in
                sink.withUnsafeMutableBufferPointer { resampler.process(source.baseAddress! + fed, frames: piece, into: $0.baseAddress!, capacity: min(take, 1 << 16)) }
            }
            fed += consumed
            output += sink.prefix(made)
            if consumed == 0 && made == 0 { break }
        }
        while true {
            let made = sink.withUnsafeMutableBufferPointer { resampler.drain(into: $0.baseAddress!, capacity: 1 << 16) }
            if made == 0 { break }
            output += sink.prefix(made)
        }
        return output
    }

    @Test("a constant ratio: N frames drain to about N / ratio, the tone scaled by it", arguments: [2.0, 0.5, 1.5])
    func constantRatio(ratio: Double) throws {
        let resampler = try VariableRateResampler(channels: 1)
        try resampler.setRatio(ratio)
        let tone = TestSignal.sine(frequency: 1000, sampleRate: 48000, count: 48000, amplitude: 0.5)
        let output = try run(tone, resampler)
        #expect(abs(Double(output.count) - 48000 / ratio) <= 1, "\(output.count) frames")
        let frequency = SignalMeasurement.frequency(of: Array(output[200..<(output.count - 200)]), sampleRate: 48000)
        #expect(abs(frequency - 1000 * ratio) < 0.5, "\(frequency) Hz")
    }

    @Test("a new ratio applies from the next output taken, however much input was given")
    func ratioAppliesAtTheOutputCursor() throws {
        let resampler = try VariableRateResampler(channels: 1)
        // A ramp: each output's value is the input position it was taken at (less the filter's lag).
        let ramp = (0..<20000).map { Float($0) / 1000 }
        var switchedAt: Int?
        let output = try run(ramp, resampler, take: 100) { taken in
            if switchedAt == nil && taken >= 2000 {
                try resampler.setRatio(2)
                switchedAt = taken
            }
        }
        // `at` outputs at ratio 1 (positions 0…at−1), then the rest of the input at 2 per output,
        // though libsoxr had been given about 1000 frames more than those outputs' positions.
        let at = try #require(switchedAt)
        #expect(abs(output.count - (at + (20000 - at) / 2)) <= 1, "\(output.count) frames, switched after \(at)")
        // The filter's lag: about 1.6 input frames; after the switch about 3.5 (measured): the new
        // ratio takes hold about one output before the cursor (libsoxr's interpolation), once.
        // (Positions from values through the filter's gain at DC, measured at ratio 1.)
        let gain = Double(output[1500] - output[500])
        func position(_ index: Int) -> Double { Double(output[index]) / gain * 1000 }
        let lagBefore = 1500 - position(1500)
        let lagAfter = Double(at + 2 * (4000 - at)) - position(4000)
        #expect(lagBefore > 1 && lagBefore < 2.5 && lagAfter > 1 && lagAfter < 5, "lags \(lagBefore), \(lagAfter) (switched after \(at))")
        let lagLater = Double(at + 2 * (9000 - at)) - position(9000)
        #expect(abs(lagLater - lagAfter) < 0.05, "the offset does not grow: \(lagAfter), then \(lagLater)")
    }

    @Test("ratios outside 1/maximum…maximum are refused")
    func invalidRatio() throws {
        let resampler = try VariableRateResampler(channels: 2, maximumRatio: 2)
        #expect(throws: AudioError.self) { try resampler.setRatio(2.5) }
        #expect(throws: AudioError.self) { try resampler.setRatio(0.4) }
        #expect(throws: AudioError.self) { try VariableRateResampler(channels: 0) }
        try resampler.setRatio(0.5)
        #expect(resampler.ratio == 0.5)
    }
}
