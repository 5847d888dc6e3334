import Foundation
@testable import SonoraDSP
import SonoraTestSupport
import Testing

@Suite("Biquad filtering")
struct BiquadTests {
    static let rate = 48_000.0

    static let designs: [(String, BiquadCoefficients)] = [
        ("peaking", .peaking(frequency: 1000, q: 2, gainDB: 9, sampleRate: rate)),
        ("peaking cut", .peaking(frequency: 3000, q: 0.7, gainDB: -15, sampleRate: rate)),
        ("low shelf", .lowShelf(frequency: 200, q: 0.7071, gainDB: 6, sampleRate: rate)),
        ("high shelf", .highShelf(frequency: 4000, q: 1, gainDB: -10, sampleRate: rate)),
        ("low pass", .lowPass(frequency: 1000, q: 0.7071, sampleRate: rate)),
        ("high pass", .highPass(frequency: 500, q: 1.5, sampleRate: rate)),
        ("band pass", .bandPass(frequency: 1000, q: 2, sampleRate: rate)),
        ("notch", .notch(frequency: 1500, q: 1, sampleRate: rate)),
        ("all pass", .allPass(frequency: 1000, q: 0.7, sampleRate: rate)),
    ]

    /// Whole numbers of cycles in the 4800-sample window (multiples of 10 Hz).
    static let frequencies = [100.0, 440, 1000, 3000, 12_000]

    @Test(arguments: designs.indices)
    func measuredGainMatchesTheAnalyticResponse(_ design: Int) {
        let (name, coefficients) = Self.designs[design]
        let settle = 4800, window = 4800
        for frequency in Self.frequencies {
            var signal = TestSignal.sine(frequency: frequency, sampleRate: Self.rate, count: settle + window, amplitude: 0.5)
            var filter = Biquad(coefficients)
            // Uneven blocks, so state carries across calls.
            signal.withUnsafeMutableBufferPointer { buffer in
                var offset = 0
                var block = 1
                while offset < buffer.count {
                    let count = min(block, buffer.count - offset)
                    filter.process(buffer.baseAddress! + offset, count: count)
                    offset += count
                    block = block * 3 % 1021 + 1
                }
            }
            let measured = SignalMeasurement.amplitude(of: signal[settle...], frequency: frequency, sampleRate: Self.rate) / 0.5
            let expected = coefficients.magnitude(atFrequency: frequency, sampleRate: Self.rate)
            let errorDB = abs(20 * log10(measured) - 20 * log10(expected))
            #expect(errorDB < 0.05, "\(name) at \(frequency) Hz: measured \(measured), expected \(expected)")
        }
    }

    @Test func outOfPlaceEqualsInPlace() {
        let input = TestSignal.sine(frequency: 777, sampleRate: Self.rate, count: 1000)
        var inPlace = input
        var outOfPlace = [Float](repeating: 0, count: input.count)
        var first = Biquad(.lowPass(frequency: 2000, q: 3, sampleRate: Self.rate))
        var second = first
        inPlace.withUnsafeMutableBufferPointer { first.process($0.baseAddress!, count: $0.count) }
        input.withUnsafeBufferPointer { source in
            outOfPlace.withUnsafeMutableBufferPointer { second.process(from: source.baseAddress!, to: $0.baseAddress!, count: 1000) }
        }
        #expect(SignalMeasurement.firstMismatch(inPlace, outOfPlace) == nil)
        #expect(inPlace != input)
    }

    @Test func changingCoefficientsKeepsStateAndResetClearsIt() {
        let coefficients = BiquadCoefficients.lowPass(frequency: 300, q: 0.7071, sampleRate: Self.rate)
        var whole = [Float](repeating: 1, count: 256)
        var split = whole
        var reference = Biquad(coefficients)
        whole.withUnsafeMutableBufferPointer { reference.process($0.baseAddress!, count: 256) }

        var filter = Biquad(coefficients)
        split.withUnsafeMutableBufferPointer { buffer in
            filter.process(buffer.baseAddress!, count: 100)
            filter.coefficients = .identity
            filter.coefficients = coefficients
            filter.process(buffer.baseAddress! + 100, count: 156)
        }
        #expect(SignalMeasurement.firstMismatch(split, whole) == nil)

        filter.reset()
        var again = [Float](repeating: 1, count: 256)
        again.withUnsafeMutableBufferPointer { filter.process($0.baseAddress!, count: 256) }
        #expect(SignalMeasurement.firstMismatch(again, whole) == nil)
    }

    @Test func decayingStateIsFlushedToZero() {
        var filter = Biquad(.lowPass(frequency: 1000, q: 0.7071, sampleRate: Self.rate))
        var block = [Float](repeating: 0, count: 64)
        block[0] = 1
        block.withUnsafeMutableBufferPointer { filter.process($0.baseAddress!, count: 64) }
        #expect(filter.state1 != 0)
        for _ in 0..<100 {
            block = [Float](repeating: 0, count: 64)
            block.withUnsafeMutableBufferPointer { filter.process($0.baseAddress!, count: 64) }
        }
        #expect(filter.state1 == 0 && filter.state2 == 0)
        #expect(block.allSatisfy { $0 == 0 })
    }
}
