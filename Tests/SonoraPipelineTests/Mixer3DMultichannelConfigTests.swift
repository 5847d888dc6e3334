import Foundation
import SonoraPipeline
import SonoraTestSupport
import SonoraUnits
import Testing

/// `mixer3d` with `output: quad` or `5.1` in a config: mono sources (declared `channels: 1`)
/// rendered offline through the pipeline land on the speakers around them — ahead in C (5.1),
/// behind-left in Ls, behind-right in Rs, nothing in the LFE.
@Suite("mixer3d: quad and 5.1 from configs")
struct Mixer3DMultichannelConfigTests {
    static let scratch = try! TemporaryFolder(prefix: "sonora-mixer3d-multichannel")

    /// Each channel's RMS (dBFS) of a one-source scene at `position`, rendered offline.
    static func levels(output: String, channels: Int, position: String, algorithm: String = "vbap") throws -> [Double] {
        let text = """
            engine: {sample_rate: 48000, period: 256, channels: \(channels)}
            nodes:
              - {id: tone, kind: tone, channels: 1, parameters: {frequency: 1 kHz, level: -12 dB}}
              - id: scene
                kind: mixer3d
                output: \(output)
                sources:
                  - {position: \(position), algorithm: \(algorithm)}
            connections:
              - {from: tone, to: "scene:0"}
              - {from: scene, to: output}
            """
        let configuration = try ConfigurationParser.parse(text, file: scratch.path + "/scene.yaml")
        #expect(PipelineBuilder.check(configuration, offline: true).map(\.description) == [])
        let pipeline = try PipelineBuilder.build(configuration, target: .offline)
        defer { pipeline.graph.uninitialize() }
        var rendered = Array(repeating: [Float](), count: channels)
        try pipeline.renderOffline(frames: 24_000) { list in
            for channel in 0..<channels { rendered[channel] += list[channel] }
        }
        return rendered.map { SignalMeasurement.rmsDBFS($0.dropFirst(4_800)) }
    }

    static func loudest(_ levels: [Double]) -> Int { levels.indices.max { levels[$0] < levels[$1] }! }

    /// 5.1 is L R C LFE Ls Rs: ahead is C, ±30° are L/R, ±110° the surrounds.
    @Test("5.1: each source on the speaker at its direction, the LFE silent", arguments: [
        ("[0, 0, -2]", 2), ("[-1, 0, -1.732]", 0), ("[1, 0, -1.732]", 1), ("[-1.879, 0, 0.684]", 4), ("[1.879, 0, 0.684]", 5),
    ])
    func fivePointOne(position: String, speaker: Int) throws {
        let levels = try Self.levels(output: "5.1", channels: 6, position: position)
        #expect(Self.loudest(levels) == speaker, "\(position): \(levels)")
        #expect(levels[speaker] - levels.enumerated().filter { $0.offset != speaker }.map(\.element).max()! > 10, "\(levels)")
        #expect(levels[3] < -100, "LFE: \(levels[3]) dBFS")
    }

    /// Quad is L R Ls Rs at ±45° and ±135°: a source at a speaker is in it alone; between two, in both.
    @Test("quad: each source on the speaker at its direction", arguments: [
        ("[-1, 0, -1]", 0), ("[1, 0, -1]", 1), ("[-1, 0, 1]", 2), ("[1, 0, 1]", 3),
    ])
    func quad(position: String, speaker: Int) throws {
        let levels = try Self.levels(output: "quad", channels: 4, position: position)
        #expect(Self.loudest(levels) == speaker, "\(position): \(levels)")
        #expect(levels[speaker] - levels.enumerated().filter { $0.offset != speaker }.map(\.element).max()! > 10, "\(levels)")
    }
}
