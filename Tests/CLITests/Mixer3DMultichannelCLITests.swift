import Foundation
import SonoraTestSupport
import Testing

/// `sonora render` of a 5.1 `mixer3d` scene: a 6-channel file, the source on its speaker.
@Suite("mixer3d: sonora render to a 5.1 file", .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct Mixer3DMultichannelCLITests {
    let scratch = try! TemporaryFolder(prefix: "sonora-mixer3d-51")

    static func loudest(_ levels: [Double]) -> Int { levels.indices.max { levels[$0] < levels[$1] }! }

    /// `sonora render` writes the 5.1 scene to a 6-channel file with the same placement.
    @Test("sonora render writes a 5.1 file: a source behind right is in channel 6 (Rs), nothing in the LFE")
    func rendersAFile() throws {
        let config = scratch.path + "/file.yaml"
        try """
            engine: {sample_rate: 48000, period: 256, channels: 6}
            nodes:
              - {id: tone, kind: tone, channels: 1, parameters: {frequency: 1 kHz, level: -12 dB}}
              - id: scene
                kind: mixer3d
                output: "5.1"
                sources:
                  - {position: [1.879, 0, 0.684]}
            connections:
              - {from: tone, to: "scene:0"}
              - {from: scene, to: output}
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let output = scratch.path + "/scene51.wav"
        let outcome = try sonora("render", config, "--output", output, "--seconds", "1")
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let info = try runProcess("/usr/bin/soxi", ["-c", output])
        #expect(info.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "6")
        var levels: [Double] = []
        for channel in 1...6 {
            let raw = scratch.path + "/ch\(channel).f32"
            _ = try runProcess("/usr/bin/sox", [output, "-t", "f32", "-c", "1", raw, "remix", "\(channel)"])
            let data = try Data(contentsOf: URL(fileURLWithPath: raw))
            let samples = data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            levels.append(SignalMeasurement.rmsDBFS(samples.dropFirst(4_800)))
        }
        #expect(Self.loudest(levels) == 5, "\(levels)")
        #expect(levels[3] < -100, "LFE: \(levels)")
    }
}
