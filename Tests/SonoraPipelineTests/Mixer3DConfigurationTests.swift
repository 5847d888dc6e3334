import Foundation
import Logging
import SonoraHAL
import SonoraPipeline
import SonoraTestSupport
import SonoraUnits
import Testing

/// A `mixer3d` node in a config: its sources (position, gain, algorithm), output layout
/// and distance settings, and every mistake reported at its file:line:column.
@Suite("mixer3d nodes in configs")
struct Mixer3DConfigurationTests {
    static let scratch = try! TemporaryFolder(prefix: "sonora-mixer3d-config")

    /// Parse and check `text` as `sonora check` does: `file:line:column: message` lines.
    static func problems(_ text: String, offline: Bool = true) -> [String] {
        let file = scratch.path + "/scene.yaml"
        do {
            let configuration = try ConfigurationParser.parse(text, file: file)
            return PipelineBuilder.check(configuration, offline: offline).map(\.description)
        } catch {
            return error.diagnostics.map(\.description)
        }
    }

    static func scene(_ node: String, engine: String = "{sample_rate: 48000, period: 256, channels: 2}") -> String {
        """
        engine: \(engine)
        nodes:
          - {id: a, kind: tone, parameters: {frequency: 440 Hz, level: -12 dB}}
          - {id: b, kind: tone, parameters: {frequency: 660 Hz, level: -12 dB}}
        \(node)
        connections:
          - {from: a, to: "scene:0"}
          - {from: b, to: "scene:1"}
          - {from: scene, to: output}
        """
    }

    static let good = scene("""
          - id: scene
            kind: mixer3d
            output: stereo
            reference_distance: 1
            maximum_distance: 50
            attenuation_curve: inverse
            sources:
              - {name: bell, position: [2, 0, -1], gain: -3 dB, algorithm: spherical-head}
              - {position: [-1.5, 0.5, 0]}
        """)

    @Test("a scene builds: one input per source, named, placed, at its gain and algorithm")
    func builds() throws {
        #expect(Self.problems(Self.good) == [])
        let configuration = try ConfigurationParser.parse(Self.good, file: Self.scratch.path + "/scene.yaml")
        let pipeline = try PipelineBuilder.build(configuration, target: .offline)
        defer { pipeline.graph.uninitialize() }
        let node = try #require(pipeline.node("scene"))
        #expect(node.sources == ["bell", "source1"])
        #expect(node.unit.elementCount(.input) == 2)
        let unit = node.unit
        let azimuth = try unit.parameter(0, scope: .input, element: 0)
        let elevation = try unit.parameter(1, scope: .input, element: 0)
        let distance = try unit.parameter(2, scope: .input, element: 0)
        let expected = Mixer3DPosition(x: 2, y: 0, z: -1)
        #expect(abs(Double(azimuth) - expected.azimuth) < 1e-4 && abs(Double(elevation)) < 1e-4 && abs(Double(distance) - expected.distance) < 1e-4)
        #expect(try unit.parameter(3, scope: .input, element: 0) == -3)
        let second = Mixer3DPosition(x: -1.5, y: 0.5, z: 0)
        #expect(abs(Double(try unit.parameter(0, scope: .input, element: 1)) - second.azimuth) < 1e-4)
        #expect(abs(Double(try unit.parameter(1, scope: .input, element: 1)) - second.elevation) < 1e-4)
    }

    @Test("each mistake is reported at its place, with what is allowed", arguments: [
        // the node's lines, then the expected line:column and message part
        ("sources:\n      - {position: [1, 0]}", "8:20", "position of sources[0] of node 'scene' must be [x, y, z]: three numbers in metres (it has 2 numbers)"),
        ("sources:\n      - {position: [1, left, 0]}", "8:24", "y of position of sources[0] of node 'scene' must be a number, not 'left'"),
        ("sources:\n      - {position: \"1,0,0\"}", "8:20", "must be [x, y, z]"),
        ("sources:\n      - {position: [0, 0, -1]}\n      - {positon: [1, 0, 0]}", "9:10", "unknown key 'positon' in sources[1] of node 'scene'; did you mean 'position'?"),
        ("sources:\n      - {position: [0, 0, -1]}\n      - {gain: -6 dB}", "9:9", "sources[1] of node 'scene' needs `position`"),
        ("sources:\n      - {position: [0, 0, -1], algorithm: hrft}", "8:43", "algorithm of sources[0] of node 'scene' must be one of equal-power, spherical-head, hrtf, vbap, pass-through, not 'hrft'; did you mean 'hrtf'?"),
        ("sources:\n      - {position: [0, 0, -1], gain: 30 dB}", "8:38", "gain of sources[0] of node 'scene' 30 is out of range -120…20 dB"),
        ("sources:\n      - {position: [0, 0, -1], gain: loud}", "8:38", "gain of sources[0] of node 'scene' must be a number (in dB), not 'loud'"),
        ("sources:\n      - {name: bell.left, position: [0, 0, -1]}", "8:16", "name of sources[0] of node 'scene' 'bell.left' must start with a letter"),
        ("sources: []", "7:14", "sources of node 'scene' is empty; give at least one"),
        ("sources: {position: [0, 0, 0]}", "7:14", "sources of node 'scene' must be a list"),
        ("output: surround\n    sources:\n      - {position: [0, 0, -1]}", "7:13", "output of node 'scene' must be one of stereo, binaural, quad, 5.1, not 'surround'"),
        ("maximum_distance: -1\n    sources:\n      - {position: [0, 0, -1]}", "7:23", "maximum_distance of node 'scene' -1 is out of range"),
        ("sources:\n      - {position: [20000, 0, 0]}", "8:20", "20000 m away; the 3D mixer places sources up to 10000 m"),
        ("sources:\n      - {name: bell, position: [0, 0, -1]}\n      - {name: bell, position: [1, 0, 0]}", "9:16", "source name 'bell' is used twice (sources 0 and 1)"),
        ("sources:\n      - {name: source1, position: [0, 0, -1]}\n      - {position: [1, 0, 0]}", "8:16", "'source1' is the name of source 1"),
        ("hrtf: nowhere.sofa\n    sources:\n      - {position: [0, 0, -1]}", "7:11", "node 'scene': file 'nowhere.sofa' does not exist or is not readable"),
        ("reference_distance: 5\n    maximum_distance: 2\n    sources:\n      - {position: [0, 0, -1]}", "8:23", "maximum_distance 2 m is below reference_distance 5 m"),
        ("output: quad\n    sources:\n      - {position: [0, 0, -1]}", "7:13", "output quad has 4 channels; the engine runs 2"),
    ])
    func mistakes(node: String, at: String, message: String) {
        let text = Self.scene("  - id: scene\n    kind: mixer3d\n    " + node)
        let found = Self.problems(text)
        #expect(found.contains { $0.contains("scene.yaml:\(at): ") && $0.contains(message) }, "\(found)")
    }

    /// Quad and 5.1 render from configs (Mixer3DMultichannelConfigTests); sources left at the
    /// engine's 4 or 6 channels are refused at each source, saying how to make them mono.
    @Test("quad and 5.1 with sources as wide as the engine: each source refused at its place, saying what to declare", arguments: [("quad", 4), ("5.1", 6)])
    func multichannel(output: String, channels: Int) {
        let node = "  - id: scene\n    kind: mixer3d\n    output: \(output)\n    sources:\n      - {position: [0, 0, -1]}\n      - {position: [1, 0, 0]}"
        let found = Self.problems(Self.scene(node, engine: "{sample_rate: 48000, period: 256, channels: \(channels)}"))
        for (index, line) in [(0, 9), (1, 10)] {
            #expect(found.contains { $0.contains("scene.yaml:\(line):") && $0.contains("source \(index) ('source\(index)') would be \(channels) channels wide") && $0.contains("declare `channels: 1`") }, "\(found)")
        }
    }

    @Test("a missing `sources` is reported at the node, saying what it is")
    func missingSources() {
        let found = Self.problems(Self.scene("  - {id: scene, kind: mixer3d}"))
        #expect(found.contains { $0.contains("scene.yaml:5:5: node 'scene' (mixer3d) needs `sources`") }, "\(found)")
    }

    @Test("save writes the sources as they now are, and the saved file reads back the same")
    func saves() throws {
        let configuration = try ConfigurationParser.parse(Self.good, file: Self.scratch.path + "/scene.yaml")
        let pipeline = try PipelineBuilder.build(configuration, target: .offline)
        defer { pipeline.graph.uninitialize() }
        let unit = try #require(pipeline.node("scene")).unit
        // Moved as `ctl set scene.bell position 0,0,-4` would.
        try unit.setParameter(0, scope: .input, element: 0, to: 0)
        try unit.setParameter(2, scope: .input, element: 0, to: 4)
        let controller = PipelineController(pipeline: pipeline, device: try TimerDevice(configuration: .init(), mode: .offline), configPath: configuration.file, logger: .init(label: "test"))
        let saved = Self.scratch.path + "/saved.yaml"
        try controller.save(to: saved, overwrite: true)
        let text = try String(contentsOfFile: saved, encoding: .utf8)
        #expect(text.contains("      - {name: bell, position: [0, 0, -4], gain: -3, algorithm: spherical-head}"), "\(text)")
        #expect(text.contains("      - {position: [-1.5, 0.5, 0], gain: 0}"), "\(text)")
        #expect(!text.contains("# azimuth") && !text.contains("# distance"), "the position is saved once, in `sources`: \(text)")
        let again = try ConfigurationParser.parse(contentsOf: saved)
        #expect(PipelineBuilder.check(again, offline: true).map(\.description) == [])
        let points = again.nodes.first { $0.id == "scene" }?.options["sources"]?.value.list?.compactMap { $0["position"]?.value.point }
        #expect(points == [SIMD3(0, 0, -4), SIMD3(-1.5, 0.5, 0)])
    }

    /// Left and right RMS (dB) of `seconds` rendered offline from a one-source scene.
    static func rendered(position: String, algorithm: String, output: String = "stereo", seconds: Double = 0.5) throws -> (left: Double, right: Double) {
        let text = """
            engine: {sample_rate: 48000, period: 256, channels: 2}
            nodes:
              - {id: tone, kind: tone, parameters: {frequency: 3 kHz, level: -12 dB}}
              - id: scene
                kind: mixer3d
                output: \(output)
                sources:
                  - {position: \(position), algorithm: \(algorithm)}
            connections:
              - {from: tone, to: "scene:0"}
              - {from: scene, to: output}
            """
        let configuration = try ConfigurationParser.parse(text, file: scratch.path + "/one.yaml")
        let pipeline = try PipelineBuilder.build(configuration, target: .offline)
        defer { pipeline.graph.uninitialize() }
        var channels: [[Float]] = [[], []]
        try pipeline.renderOffline(frames: Int(seconds * 48000)) { list in
            for channel in 0..<2 { channels[channel] += list[channel] }
        }
        // The first 0.1 s left out: the source's first moves settle there.
        return (SignalMeasurement.rmsDBFS(channels[0].dropFirst(4800)), SignalMeasurement.rmsDBFS(channels[1].dropFirst(4800)))
    }

    /// At 3 kHz, where a head shadows the far ear (the spherical head and HRTF lateralize
    /// low tones by delay more than by level).
    @Test("a source is heard on its side and quieter far away, whatever the algorithm", arguments: ["equal-power", "spherical-head", "vbap", "hrtf"])
    func placement(algorithm: String) throws {
        let right = try Self.rendered(position: "[3, 0, -1]", algorithm: algorithm)
        let left = try Self.rendered(position: "[-3, 0, -1]", algorithm: algorithm)
        let ahead = try Self.rendered(position: "[0, 0, -1]", algorithm: algorithm)
        let far = try Self.rendered(position: "[0, 0, -16]", algorithm: algorithm)
        #expect(right.right - right.left > 3, "+x: \(right)")
        #expect(left.left - left.right > 3, "-x: \(left)")
        #expect(abs(ahead.left - ahead.right) < 1.5, "ahead: \(ahead)")
        // The inverse curve from 1 m: 16 m is 24 dB down.
        #expect(abs((ahead.left - far.left) - 24) < 1.5 && abs((ahead.right - far.right) - 24) < 1.5, "1 m \(ahead), 16 m \(far)")
    }

    @Test("in process: NODE.SOURCE position is set and read through the controller; a reload that only moves lines keeps the node and where its sources are")
    func controllerAndReload() throws {
        let config = Self.scratch.path + "/reload.yaml"
        FileManager.default.createFile(atPath: config, contents: Data(Self.good.utf8))
        let pipeline = try PipelineBuilder.build(try ConfigurationParser.parse(contentsOf: config), target: .offline)
        let controller = PipelineController(pipeline: pipeline, device: try TimerDevice(configuration: .init(), mode: .offline), configPath: config, logger: .init(label: "test"))
        defer { controller.pipeline.graph.uninitialize() }
        let selector = ControlRequest.ParameterSelector(node: "scene.bell", parameter: .name("position"))
        guard case .parameter(let set) = controller.handle(.set(selector, value: .text("0, 0, -4"), ramp: nil)) else {
            Issue.record("set was refused")
            return
        }
        #expect(set.values == [0, 0, -4] && set.value == 4 && set.node == "scene.bell" && set.element == 0)
        let unit = try #require(controller.pipeline.node("scene")).unit
        #expect(try unit.parameter(2, scope: .input, element: 0) == 4)
        // By index, in the unit's own terms.
        guard case .parameter(let azimuth) = controller.handle(.get(.init(node: "scene.source1", parameter: .name("azimuth")))) else {
            Issue.record("get azimuth was refused")
            return
        }
        #expect(abs(azimuth.value - Mixer3DPosition(x: -1.5, y: 0.5, z: 0).azimuth) < 1e-4 && azimuth.node == "scene" && azimuth.element == 1)
        guard case .failure(let unknown) = controller.handle(.get(.init(node: "scene.drum", parameter: .name("position")))) else {
            Issue.record("an unknown source was accepted")
            return
        }
        #expect(unknown.code == .unknownNode && unknown.message.contains("sources: bell (source0), source1"), "\(unknown.message)")

        // `params NODE.SOURCE`: the unit's input parameters of that element.
        guard case .parameters(let node, let list) = controller.handle(.parameters(node: "scene.source1")) else {
            Issue.record("params of a source was refused")
            return
        }
        #expect(node == "scene.source1" && !list.isEmpty && list.allSatisfy { $0.scope == "input" && $0.element == 1 })
        #expect(list.contains { $0.name == "Distance" && abs(($0.value ?? 0) - Mixer3DPosition(x: -1.5, y: 0.5, z: 0).distance) < 1e-4 })

        // The same file with a comment on top: every line moved, nothing changed.
        FileManager.default.createFile(atPath: config, contents: Data(("# moved\n" + Self.good).utf8))
        #expect(controller.reload().map(\.description) == [])
        #expect(try #require(controller.pipeline.node("scene")).unit === unit, "the node was rebuilt")
        #expect(try unit.parameter(2, scope: .input, element: 0) == 4, "the moved source went back")
    }
}
