import SonoraDSP
import SonoraTestSupport
import Testing

@Suite("Delay line")
struct DelayLineTests {
    /// Runs `input` through `line` in blocks of varying size, calling `before` ahead of each block.
    static func run(_ line: inout DelayLine, _ input: [Float], blocks: [Int], before: (Int, inout DelayLine) -> Void = { _, _ in }) -> [Float] {
        var output = input
        output.withUnsafeMutableBufferPointer { buffer in
            var offset = 0, index = 0
            while offset < buffer.count {
                let count = min(blocks[index % blocks.count], buffer.count - offset)
                before(offset, &line)
                line.process(buffer.baseAddress! + offset, count: count)
                offset += count
                index += 1
            }
        }
        return output
    }

    /// Distinct, exactly representable samples, none zero.
    static let input = (0..<6000).map { Float($0 + 1) }
    static let blocks = [1, 64, 7, 511, 2, 1300, 128, 33]

    @Test(arguments: [0, 1, 5, 63, 64, 65, 1000, 1499, 1500])
    func delaysExactlyAcrossBlocks(_ delay: Int) {
        var line = DelayLine(maximumDelay: 1500)
        line.delay = delay
        let output = Self.run(&line, Self.input, blocks: Self.blocks)
        let expected = Self.input.indices.map { $0 >= delay ? Self.input[$0 - delay] : 0 }
        #expect(SignalMeasurement.firstMismatch(output, expected) == nil)
    }

    @Test func blocksLongerThanTheRing() {
        var line = DelayLine(maximumDelay: 10)
        line.delay = 10
        let output = Self.run(&line, Self.input, blocks: [5000, 1000])
        #expect(SignalMeasurement.firstMismatch(output, Self.input.indices.map { $0 >= 10 ? Self.input[$0 - 10] : 0 }) == nil)
    }

    @Test func changingTheDelayReadsRealHistory() {
        var line = DelayLine(maximumDelay: 800)
        line.delay = 10
        // Block boundaries at multiples of 100; the delay changes at 2000 and 4000.
        let output = Self.run(&line, Self.input, blocks: [100]) { offset, line in
            if offset == 2000 { line.delay = 750 }
            if offset == 4000 { line.delay = 3 }
        }
        for n in Self.input.indices {
            let delay = n < 2000 ? 10 : n < 4000 ? 750 : 3
            let expected = n >= delay ? Self.input[n - delay] : 0
            #expect(output[n] == expected, "sample \(n)")
            if output[n] != expected { break }
        }
    }

    @Test func delayIsClampedAndResetSilences() {
        var line = DelayLine(maximumDelay: 100)
        line.delay = -5
        #expect(line.delay == 0)
        line.delay = 1_000_000
        #expect(line.delay == 100 && line.maximumDelay == 100)
        _ = Self.run(&line, Array(Self.input[..<500]), blocks: [64])
        line.reset()
        let output = Self.run(&line, Array(Self.input[..<200]), blocks: [64])
        #expect(output == Array(repeating: 0, count: 100) + Array(Self.input[..<100]))

        var none = DelayLine(maximumDelay: -3)
        none.delay = 4
        #expect(none.maximumDelay == 0 && none.delay == 0)
        #expect(Self.run(&none, Array(Self.input[..<300]), blocks: [7]) == Array(Self.input[..<300]))
    }
}
