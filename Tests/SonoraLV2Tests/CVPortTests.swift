import SonoraLV2
import SonoraTestSupport
import Testing

/// CV ports are audio-rate inputs on a bus of their own (lv2apply cannot host them).
@Suite struct CVPortTests {
    static let uri = "http://drobilla.net/plugins/fomp/mvclpf1"

    static func render(freq: Float, fm: Float) throws -> [Float] {
        let unit = try Fixtures.unit(uri, maximumFrames: 256)
        try unit.setControl("freq", to: freq)
        let count = Fixtures.input.count
        let cv = [[Float](repeating: fm, count: count), [Float](repeating: 0, count: count), [Float](repeating: 0, count: count)]
        return try unit.renderOffline(inputs: [[Fixtures.input], cv], blockSize: 256)[0][0]
    }

    @Test func cvIsABusOfItsOwn() throws {
        let unit = try Fixtures.unit(Self.uri)
        #expect(unit.layout.inputs.map(\.name) == ["in", "cv"])
        #expect(unit.layout.inputs[1].isCV && unit.layout.inputs[1].ports == [2, 3, 4])
        // The bundle gives the default in Hz though the range is in fractions of the rate.
        #expect(try unit.parameterInfo(6).defaultValue == 440)
    }

    @Test func frequencyModulationInputMovesTheCutoffByOctaves() throws {
        let octaveUp = try Self.render(freq: 500, fm: 1)
        let doubled = try Self.render(freq: 1000, fm: 0)
        let unmodulated = try Self.render(freq: 500, fm: 0)
        let close = SignalMeasurement.maximumDifference([octaveUp], [doubled])
        let apart = SignalMeasurement.maximumDifference([octaveUp], [unmodulated])
        #expect(close < apart / 10, "fm = 1 octave at 500 Hz differs from 1000 Hz by \(close), from 500 Hz by \(apart)")
    }
}
