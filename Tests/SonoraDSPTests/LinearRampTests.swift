import SonoraDSP
import SonoraTestSupport
import Testing

@Suite("Linear ramp")
struct LinearRampTests {
    /// The contract: sample k of a ramp from a to b over n frames.
    static func expected(_ a: Float, _ b: Float, _ n: Int, _ k: Int) -> Float {
        k < n ? a + (b - a) * Float(k) / Float(n) : b
    }

    static let cases: [(Float, Float, Int)] = [(0, 1, 1), (0, 1, 7), (1, 0, 480), (0.3, -0.7, 1000), (-2, 5, 48_000), (0.25, 0.25, 10)]

    @Test(arguments: cases.indices)
    func nextFollowsTheContractExactly(_ index: Int) {
        let (a, b, n) = Self.cases[index]
        var ramp = LinearRamp(value: 42)
        ramp.ramp(from: a, to: b, frames: n)
        #expect(ramp.isRamping && ramp.target == b)
        for k in 0..<(n + 5) {
            let value = ramp.next()
            #expect(value == Self.expected(a, b, n, k), "sample \(k)")
            if value != Self.expected(a, b, n, k) { return }
        }
        #expect(!ramp.isRamping && ramp.value == b)
    }

    @Test(arguments: cases.indices)
    func applyGainInAnyBlockingMatchesTheContract(_ index: Int) {
        let (a, b, n) = Self.cases[index]
        let total = n + 300
        // Ones show the gain itself; other samples show it is one multiply per sample.
        for input in [[Float](repeating: 1, count: total), (0..<total).map { Float($0 % 13) * 0.37 - 2 }] {
            var ramp = LinearRamp(value: 0)
            ramp.ramp(from: a, to: b, frames: n)
            var output = input
            output.withUnsafeMutableBufferPointer { buffer in
                var offset = 0, block = 1
                while offset < total {
                    let count = min(block, total - offset)
                    ramp.applyGain(to: buffer.baseAddress! + offset, count: count)
                    offset += count
                    block = block * 5 % 257 + 1
                }
            }
            let expected = input.indices.map { input[$0] * Self.expected(a, b, n, $0) }
            #expect(SignalMeasurement.firstMismatch(output, expected) == nil)
        }
    }

    @Test func advanceSkipsFramesExactly() {
        var ramp = LinearRamp(value: 0)
        ramp.ramp(to: 1, frames: 100)
        ramp.advance(frames: 37)
        #expect(ramp.remainingFrames == 63)
        #expect(ramp.value == Self.expected(0, 1, 100, 37))
        #expect(ramp.next() == Self.expected(0, 1, 100, 37))
        ramp.advance(frames: 0)
        ramp.advance(frames: -5)
        #expect(ramp.next() == Self.expected(0, 1, 100, 38))
        ramp.advance(frames: Int.max)
        #expect(!ramp.isRamping && ramp.remainingFrames == 0 && ramp.next() == 1)
    }

    @Test func rampStartsFromTheCurrentValueAndJumpsWhenTooShort() {
        var ramp = LinearRamp(value: 0.5)
        #expect(!ramp.isRamping && ramp.value == 0.5 && ramp.target == 0.5)
        ramp.ramp(to: 1.5, frames: 10)
        #expect(ramp.next() == 0.5)
        ramp.advance(frames: 4)
        let current = ramp.value
        #expect(current == Self.expected(0.5, 1.5, 10, 5))
        // A new ramp mid-way starts where the old one is, without a step.
        ramp.ramp(to: 0, frames: 4)
        #expect(ramp.next() == current)
        #expect(ramp.next() == Self.expected(current, 0, 4, 1))

        ramp.ramp(to: 3, frames: 0)
        #expect(!ramp.isRamping && ramp.value == 3)
        ramp.ramp(from: 9, to: -1, frames: -4)
        #expect(!ramp.isRamping && ramp.value == -1)

        ramp.ramp(to: 10, frames: 100)
        ramp.set(0.25)
        #expect(!ramp.isRamping && ramp.value == 0.25 && ramp.target == 0.25 && ramp.next() == 0.25)
    }

    @Test func constantGainPath() {
        var samples: [Float] = (0..<37).map { Float($0) - 18.5 }
        let input = samples
        var unity = LinearRamp(value: 1)
        samples.withUnsafeMutableBufferPointer { unity.applyGain(to: $0.baseAddress!, count: 37) }
        #expect(samples == input)
        var half = LinearRamp(value: 0.5)
        samples.withUnsafeMutableBufferPointer { half.applyGain(to: $0.baseAddress!, count: 37) }
        #expect(samples == input.map { $0 * 0.5 })
    }
}
