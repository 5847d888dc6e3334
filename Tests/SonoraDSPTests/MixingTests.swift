import SonoraDSP
import Testing

@Suite("Mixing kernels")
struct MixingTests {
    /// Pseudo-random but reproducible samples.
    static func samples(_ count: Int, seed: Int) -> [Float] {
        (0..<count).map { Float((($0 &+ seed) &* 2_654_435_761) % 2001 - 1000) / 997 }
    }

    static let gains: [Float] = [0, 1, -1, 0.7071, 3.25]

    /// Runs `body` on buffers offset by one float, so SIMD loads are misaligned, and checks
    /// that the guard samples around the destination stay untouched.
    static func check(
        count: Int, reference: (Float, Float) -> Float,
        _ body: (UnsafePointer<Float>, UnsafeMutablePointer<Float>) -> Void
    ) -> Bool {
        let source = samples(count + 2, seed: 1)
        var destination = samples(count + 2, seed: 2)
        let before = destination
        source.withUnsafeBufferPointer { from in
            destination.withUnsafeMutableBufferPointer { to in body(from.baseAddress! + 1, to.baseAddress! + 1) }
        }
        var expected = before
        for index in 1..<(count + 1) {
            expected[index] = reference(source[index], before[index])
        }
        return destination == expected
    }

    @Test func addMatchesTheScalarLoop() {
        for count in 0...70 {
            for gain in Self.gains {
                #expect(Self.check(count: count, reference: { $1 + $0 * gain }) {
                    Mixing.add($0, into: $1, count: count, gain: gain)
                }, "count \(count) gain \(gain)")
            }
        }
    }

    @Test func copyMatchesTheScalarLoop() {
        for count in 0...70 {
            for gain in Self.gains {
                #expect(Self.check(count: count, reference: { source, _ in source * gain }) {
                    Mixing.copy($0, to: $1, count: count, gain: gain)
                }, "count \(count) gain \(gain)")
            }
        }
    }

    @Test func scaleMatchesTheScalarLoop() {
        for count in 0...70 {
            for gain in Self.gains {
                #expect(Self.check(count: count, reference: { _, destination in destination * gain }) {
                    Mixing.scale($1, count: count, by: gain)
                }, "count \(count) gain \(gain)")
            }
        }
    }

    @Test func copyInPlaceScales() {
        var buffer = Self.samples(33, seed: 5)
        let input = buffer
        buffer.withUnsafeMutableBufferPointer { Mixing.copy($0.baseAddress!, to: $0.baseAddress!, count: 33, gain: -2) }
        #expect(buffer == input.map { $0 * -2 })
    }
}
