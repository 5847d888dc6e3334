import Foundation
import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

/// A minimal 32-bit float WAV writer for tests (files proper are SonoraFile's job).
func wavBytes(_ channels: [[Float]], sampleRate: Int) -> [UInt8] {
    let frames = channels.first?.count ?? 0
    let dataBytes = frames * channels.count * 4
    var bytes: [UInt8] = []
    func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    bytes += Array("RIFF".utf8); append(UInt32(36 + dataBytes)); bytes += Array("WAVE".utf8)
    bytes += Array("fmt ".utf8); append(UInt32(16)); append(UInt16(3)); append(UInt16(channels.count))
    append(UInt32(sampleRate)); append(UInt32(sampleRate * channels.count * 4)); append(UInt16(channels.count * 4)); append(UInt16(32))
    bytes += Array("data".utf8); append(UInt32(dataBytes))
    for frame in 0..<frames { for channel in channels { append(channel[frame].bitPattern) } }
    return bytes
}

@Suite("Offline render")
struct OfflineRenderTests {
    /// generator → EQ → mixer → generic output, rendered to WAV twice: the same bytes.
    @Test func generatorEQMixerGraphRendersTheSameBytesTwice() throws {
        func render(to url: URL) throws -> [UInt8] {
            let graph = AudioGraph()
            let noise = ToneGeneratorUnit()
            try noise.setParameter(ToneGeneratorUnit.Parameter.waveform, to: Float(ToneGeneratorUnit.Waveform.pinkNoise.rawValue))
            let sine = ToneGeneratorUnit()
            try sine.setParameter(ToneGeneratorUnit.Parameter.frequency, to: 440)
            let eq = GraphicEQUnit()
            try eq.setPresentPreset(eq.factoryPresets.first { $0.name == "Loudness" }!)
            let mixer = MultiChannelMixerUnit(inputs: 2)
            try mixer.setParameter(MultiChannelMixerUnit.Parameter.pan, scope: .input, element: 1, to: -0.3)
            let n = graph.addNode(noise), s = graph.addNode(sine), e = graph.addNode(eq)
            let m = graph.addNode(mixer), out = graph.addNode(GenericOutputUnit())
            try graph.connect(n, bus: 0, to: e, input: 0)
            try graph.connect(e, bus: 0, to: m, input: 0)
            try graph.connect(s, bus: 0, to: m, input: 1)
            try graph.connect(m, bus: 0, to: out, input: 0)
            try graph.initialize()
            let channels = try graph.renderOffline(frameCount: 48000, sliceFrames: 480)
            let bytes = wavBytes(channels, sampleRate: 48000)
            try Data(bytes).write(to: url)
            return Array(try Data(contentsOf: url))
        }
        let directory = try TemporaryFolder(prefix: "sonora-offline")
        let first = try render(to: directory.url("a.wav"))
        let second = try render(to: directory.url("b.wav"))
        #expect(first.count == 44 + 48000 * 2 * 4)
        #expect(first == second)
        // And it is not silence.
        let samples = first[44...].withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(samples.contains { abs($0) > 0.01 })
    }
}
