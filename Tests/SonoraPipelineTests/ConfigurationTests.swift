import Foundation
import SonoraPipeline
import SonoraTestSupport
import Testing

/// The repository's Configs/ folder.
let configsFolder = PackageRoot.path("Configs")

/// Diagnostics for `text` (parse + validation), as `line:column: message` strings.
func problems(_ text: String) -> [String] {
    let file = configsFolder + "/test.yaml"  // relative files resolve against Configs/
    do {
        let configuration = try ConfigurationParser.parse(text, file: file)
        return PipelineBuilder.check(configuration).map { "\($0.location.line):\($0.location.column): \($0.message)" }
    } catch {
        return error.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" }
    }
}

@Suite("Pipeline configs: parsing and validation")
struct ConfigurationTests {
    @Test("a valid config has no problems")
    func valid() {
        let text = """
            engine: {sample_rate: 48000, period: 128, periods: 2, channels: 2}
            nodes:
              - {id: tone, kind: ToneGenerator, parameters: {frequency: 1.2 kHz, level: -6 dB}}
              - {id: eq, kind: GraphicEQ, preset: Jazz}
            connections:
              - {from: tone, to: eq}
              - {from: eq, to: output}
            """
        #expect(problems(text) == [])
    }

    @Test("syntax errors point at the line and column")
    func syntax() {
        let found = problems("nodes:\n  - id: a\n   kind: [unclosed\n")
        #expect(found.count == 1)
        #expect(found.first?.contains("YAML syntax") == true)
        #expect(found.first?.hasPrefix("3:") == true || found.first?.hasPrefix("4:") == true)
    }

    @Test("every form problem in one pass, each at its position")
    func formProblems() {
        let text = """
            engin: {}
            engine: {sample_rate: 12, period: 64x}
            nodes:
              - {id: a, kind: ToneGenerator, colour: red}
              - {kind: Gain}
              - {id: a, kind: Gain}
            connections:
              - {from: a}
              - {from: "a:x", to: output}
            """
        #expect(problems(text) == [
            "1:1: unknown key 'engin' in the pipeline; did you mean 'engine'? (allowed: version, engine, device, nodes, connections, control, status, session, metrics, transport)",
            "2:23: engine.sample_rate 12 is out of range 8000…384000",
            "2:35: engine.period must be a whole number, not '64x'",
            "4:34: node 'a': `colour` does not apply to ToneGenerator (it takes no options of its own; every node takes id, kind, parameters, preset, bypass, channels, comment)",
            "5:5: a node needs an `id`",
            "6:5: node id 'a' is used twice (first at 4:5)",
            "8:5: a connection needs both `from` and `to`",
            "9:12: element in 'a:x' must be a whole number in 0…1023",
        ])
    }

    @Test("units, parameters, presets, values, connections: every problem, with suggestions")
    func semanticProblems() {
        let text = """
            nodes:
              - id: tone
                kind: ToneGenerater
              - id: eq
                kind: GraphicEQ
                preset: Rok
              - id: mix
                kind: mixer
                inputs: 2
                parameters:
                  - {name: volum, scope: input, element: 0, value: 0.5}
                  - {name: volume, scope: input, element: 5, value: 0.5}
                  - {name: pan, scope: input, element: 1, value: 3}
                  - {name: volume, scope: output, value: 12 Hz}
              - id: lost
                kind: Gain
            connections:
              - {from: eq, to: mix:0}
              - {from: mix, to: output}
              - {from: nosuch, to: mix:1}
            """
        #expect(problems(text) == [
            "3:11: node 'tone': unknown kind 'ToneGenerater'; did you mean 'ToneGenerator'? (`sonora units` lists them)",
            "6:13: node 'eq': no preset 'Rok'; did you mean 'Rock'? (presets: Acoustic, Bass Booster, Bass Reducer, Classical, Dance, Deep, Electronic, Flat, Hip-Hop, Jazz, Latin, Loudness, Lounge, Piano, Pop, R&B, Rock, Small Speakers, Spoken Word, Treble Booster, Treble Reducer, Vocal Booster)",
            "11:9: node 'mix' (MultiChannelMixer) has no parameter 'volum'; did you mean 'Volume'? (parameters: Enable, Output Average Power 0, Output Average Power 1, Output Peak Hold Level 0, Output Peak Hold Level 1, Pan, Post Average Power 0, Post Average Power 1, Post Peak Hold Level 0, Post Peak Hold Level 1, Pre Average Power 0, Pre Average Power 1, Pre Peak Hold Level 0, Pre Peak Hold Level 1, Volume)",
            "12:9: node 'mix': element 5 out of range; MultiChannelMixer's input scope has 2 elements",
            "13:54: node 'mix': 3 is out of range for 'Pan': -1…1",
            "14:46: node 'mix': 'Volume' is a linear gain (a plain number, or in dB); '12 Hz' is not",
            "15:5: node 'lost' does not reach `output`, so it would never run; connect it or remove it",
            "20:12: no node 'nosuch'",
        ])
    }

    @Test("cycles and double-fed inputs are refused at the connection")
    func cycles() {
        let text = """
            nodes:
              - {id: a, kind: Gain}
              - {id: b, kind: Gain}
            connections:
              - {from: a, to: b}
              - {from: b, to: a}
              - {from: b, to: output}
              - {from: a, to: output}
            """
        let found = problems(text)
        #expect(found.contains { $0.hasPrefix("6:5: ") && $0.contains("would close a cycle") })
        #expect(found.contains { $0.hasPrefix("8:19: ") && $0.contains("'output:0' is already fed by the connection at 7:5") })
    }

    @Test("missing files are named")
    func files() {
        let text = """
            nodes:
              - {id: p, kind: player, file: no-such.wav}
              - {id: r, kind: recorder, file: /no/such/folder/out.wav}
            connections:
              - {from: p, to: r}
              - {from: r, to: output}
            """
        #expect(problems(text) == [
            "2:33: node 'p': file 'no-such.wav' does not exist or is not readable",
            "3:35: node 'r': folder '/no/such/folder' for '/no/such/folder/out.wav' does not exist",
        ])
    }

    @Test("values in units: dB to linear gain, kHz to Hz, ms to seconds, names of indexed values")
    func values() throws {
        let text = """
            nodes:
              - {id: t, kind: tone, parameters: {waveform: pink noise, frequency: 1.5 kHz, level: -12 dB, impulseInterval: 250 ms}}
              - {id: m, kind: mixer, inputs: 1, parameters: [{name: volume, scope: input, element: 0, value: -6 dB}]}
            connections:
              - {from: t, to: m}
              - {from: m, to: output}
            """
        let configuration = try ConfigurationParser.parse(text, file: configsFolder + "/values.yaml")
        let pipeline = try PipelineBuilder.build(configuration, target: .offline)
        defer { pipeline.graph.uninitialize() }
        let tone = try #require(pipeline.node("t")).unit
        #expect(try tone.parameter(0) == 3)
        #expect(try tone.parameter(1) == 1500)
        #expect(try tone.parameter(2) == -12)
        #expect(abs(try tone.parameter(5) - 0.25) < 1e-6)
        let mixer = try #require(pipeline.node("m")).unit
        #expect(abs(try mixer.parameter(0, scope: .input, element: 0) - 0.501187) < 1e-5)
    }

    @Test("every config in Configs/ checks clean", arguments: (try? FileManager.default.contentsOfDirectory(atPath: configsFolder))?.filter { $0.hasSuffix(".yaml") }.sorted() ?? [])
    func shippedConfigs(name: String) throws {
        let configuration = try ConfigurationParser.parse(contentsOf: configsFolder + "/" + name)
        #expect(PipelineBuilder.check(configuration).map(\.description) == [])
    }

    @Test("the schema is JSON naming every top-level key")
    func schema() throws {
        let object = try JSONSerialization.jsonObject(with: Data(ConfigurationSchema.json.utf8)) as? [String: Any]
        let properties = object?["properties"] as? [String: Any] ?? [:]
        #expect(Set(properties.keys) == ["version", "engine", "device", "nodes", "connections", "control", "status", "session", "metrics", "transport"])
    }
}

@Suite("docs/pipelines.md")
struct DocumentationExampleTests {
    static let examples: [String] = {
        let path = URL(fileURLWithPath: configsFolder).deletingLastPathComponent().appendingPathComponent("docs/pipelines.md").path
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.components(separatedBy: "```yaml\n").dropFirst().compactMap { $0.components(separatedBy: "```").first }
    }()

    @Test("the reference shows an example for every node kind")
    func coversEveryKind() {
        let all = Self.examples.joined()
        for kind in ["player", "GraphicEQ", "recorder", "ToneGenerator", "ParametricEQ", "Gain", "Meter", "MultiChannelMixer", "Splitter", "SampleDelay", "Converter", "lv2", "voice"] {
            #expect(all.contains("kind: \(kind)"), "no example of \(kind)")
        }
    }

    @Test("every example in the reference checks clean", arguments: examples.indices)
    func example(index: Int) throws {
        let file = URL(fileURLWithPath: configsFolder).deletingLastPathComponent().appendingPathComponent("docs/example\(index).yaml").path
        let configuration = try ConfigurationParser.parse(Self.examples[index], file: file)
        #expect(PipelineBuilder.check(configuration).map(\.description) == [])
    }
}

@Suite("LV2 nodes in configs")
struct LV2NodeTests {
    @Test("a plugin by URI, its parameters by symbol, its preset by name")
    func plugin() throws {
        let text = """
            nodes:
              - {id: comp, kind: lv2, uri: "urn:zamaudio:ZamCompX2", preset: PoppySnare, parameters: {mak: 6 dB, thr: -20 dB}}
            connections:
              - {from: comp, to: output}
            """
        let configuration = try ConfigurationParser.parse(text, file: configsFolder + "/lv2.yaml")
        let pipeline = try PipelineBuilder.build(configuration, target: .offline)
        defer { pipeline.graph.uninitialize() }
        let unit = try #require(pipeline.node("comp")).unit
        #expect(try unit.parameter(10) == 6)   // mak, port 10
        #expect(try unit.parameter(9) == -20)  // thr, port 9
        #expect(unit.presentPreset?.name == "PoppySnare")
    }

    @Test("unknown URIs and a missing uri are reported")
    func problemsReported() {
        let text = """
            engine: {channels: 2}
            nodes:
              - {id: a, kind: lv2, uri: "urn:nope:nothing"}
              - {id: b, kind: lv2}
              - {id: c, kind: lv2, uri: "http://lv2plug.in/plugins/eg-amp"}
            connections:
              - {from: a, to: b}
              - {from: b, to: c}
              - {from: c, to: output}
            """
        let found = problems(text)
        #expect(found.contains { $0.hasPrefix("3:29: node 'a': ") && $0.contains("urn:nope:nothing") })
        #expect(found.contains("4:5: node 'b' (lv2) needs `uri`: the plugin's URI (`sonora plugins` lists them)"))
        // A mono plugin in a stereo chain is no error: it runs as linked instances (issue 21).
        #expect(found.count == 2, "\(found)")  // no follow-on "no node" errors for the nodes that failed
    }
}
