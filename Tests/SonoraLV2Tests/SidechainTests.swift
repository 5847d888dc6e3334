import SonoraLV2
import Testing

/// A sidechain input is its own element, and it drives the plugin: zam's compressor with its
/// sidechain switched on compresses the main signal by what the sidechain carries.
@Suite struct SidechainTests {
    static func render(sidechain level: Float) throws -> (rms: Float, reduction: Float) {
        let unit = try Fixtures.unit("urn:zamaudio:ZamCompX2", maximumFrames: 512)
        for (symbol, value) in ["sidechain": 1, "thr": -40, "rat": 20, "att": 1, "rel": 50, "mak": 0] as [String: Float] {
            try unit.setControl(symbol, to: value)
        }
        let main = Fixtures.input.map { $0 * 0.1 }
        let side = Fixtures.input.map { $0 * level }
        let output = try unit.renderOffline(inputs: [[main, main], [side]], blockSize: 512)[0][0]
        let tail = output[6000...]
        let rms = (tail.map { $0 * $0 }.reduce(0, +) / Float(tail.count)).squareRoot()
        return (rms, try unit.control("gr"))
    }

    @Test func sidechainDrivesTheCompressor() throws {
        let silent = try Self.render(sidechain: 0)
        let loud = try Self.render(sidechain: 1)
        #expect(loud.rms < silent.rms * 0.5, "loud sidechain: \(loud.rms), silent: \(silent.rms)")
        #expect(loud.reduction > silent.reduction)
    }
}
