import Foundation
import Logging
import SonoraHAL
import SonoraCore
import SonoraLV2
import SonoraPipeline
import SonoraTestSupport
import SonoraUnits
import Testing

/// Channels per node in configs: declared or inferred, merger / splitter / channel_map,
/// width mismatches reported at the connection, mono LV2 plugins linked on wider buses.
@Suite("Pipeline configs: channels per node")
struct ChannelLayoutConfigTests {
    static let file = "/tmp/channels-test.yaml"

    /// `line:column: message` of every problem `sonora check --offline` finds in `text`.
    static func problems(_ text: String) -> [String] {
        do {
            let configuration = try ConfigurationParser.parse(text, file: file)
            return PipelineBuilder.check(configuration, offline: true).map { "\($0.location.line):\($0.location.column): \($0.message)" }
        } catch {
            return error.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" }
        }
    }

    static func build(_ text: String) throws -> BuiltPipeline {
        try PipelineBuilder.build(try ConfigurationParser.parse(text, file: file), target: .offline)
    }

    /// Renders `frames` frames offline; returns the output's channels.
    static func render(_ pipeline: BuiltPipeline, frames: Int) throws -> [[Float]] {
        var channels = Array(repeating: [Float](), count: pipeline.configuration.engine.channels)
        try pipeline.renderOffline(frames: frames) { list in
            for channel in 0..<list.channelCount { channels[channel] += Array(list[channel]) }
        }
        return channels
    }

    static func width(_ pipeline: BuiltPipeline, _ id: String, _ scope: AudioUnitScope, _ element: Int = 0) -> Int? {
        (try? pipeline.node(id)?.unit.streamFormat(scope: scope, element: element)).map { Int($0.channelsPerFrame) }
    }

    @Test("a mono source into a stereo node is an error at the connection, naming both ends and a channel_map")
    func mismatchIsReportedAtTheConnection() {
        let found = Self.problems("""
            nodes:
              - {id: mono, kind: tone, channels: 1}
              - {id: wide, kind: Gain, channels: 2}
            connections:
              - {from: mono, to: wide}
              - {from: wide, to: output}
            """)
        #expect(found.count == 1, "\(found)")
        let message = found.first ?? ""
        #expect(message.hasPrefix("5:5: 'mono' output 0 (1 channel) cannot feed 'wide' input 0 (2 channels)"), "\(message)")
        #expect(message.contains("kind: channel_map, map: [0, 0]"), "\(message)")
    }

    @Test("a mono chain into the stereo device is an error naming `output` and its width")
    func monoIntoTheDeviceIsAnError() {
        let found = Self.problems("""
            engine: {channels: 2}
            nodes:
              - {id: mono, kind: tone, channels: 1}
              - {id: trim, kind: Gain}
            connections:
              - {from: mono, to: trim}
              - {from: trim, to: output}
            """)
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.hasPrefix("7:5: 'trim' output 0 (1 channel) cannot feed `output` (the device, engine.channels 2)") == true, "\(found)")
    }

    @Test("widths are inferred from the sources: two mono chains merged into stereo")
    func monoChainsMergedIntoStereo() throws {
        let pipeline = try Self.build("""
            engine: {channels: 2, period: 128}
            nodes:
              - {id: left, kind: tone, channels: 1, parameters: {frequency: 440 Hz, level: -6 dB}}
              - {id: right, kind: tone, channels: 1, parameters: {frequency: 440 Hz, level: -26 dB}}
              - {id: trim, kind: Gain, parameters: {gain: 0 dB}}
              - {id: both, kind: merger, inputs: 2}
            connections:
              - {from: left, to: trim}
              - {from: trim, to: "both:0"}
              - {from: right, to: "both:1"}
              - {from: both, to: output}
            """)
        #expect(Self.width(pipeline, "trim", .input) == 1)
        #expect(Self.width(pipeline, "trim", .output) == 1)
        #expect(Self.width(pipeline, "both", .output) == 2)
        let output = try Self.render(pipeline, frames: 4800)
        let difference = SignalMeasurement.rmsDBFS(output[0]) - SignalMeasurement.rmsDBFS(output[1])
        #expect(abs(difference - 20) < 0.5, "left \(SignalMeasurement.rmsDBFS(output[0])) dB, right \(SignalMeasurement.rmsDBFS(output[1])) dB")
    }

    @Test("channel_map swaps a pair with [1, 0] and silences with -1")
    func channelMapSwapsAndSilences() throws {
        func pipeline(_ map: String) throws -> [[Float]] {
            try Self.render(Self.build("""
                nodes:
                  - {id: loud, kind: tone, channels: 1, parameters: {level: -6 dB}}
                  - {id: quiet, kind: tone, channels: 1, parameters: {level: -30 dB}}
                  - {id: pair, kind: merger}
                  - {id: map, kind: channel_map, map: \(map)}
                connections:
                  - {from: loud, to: "pair:0"}
                  - {from: quiet, to: "pair:1"}
                  - {from: pair, to: map}
                  - {from: map, to: output}
                """), frames: 4800)
        }
        let swapped = try pipeline("[1, 0]")
        #expect(abs(SignalMeasurement.rmsDBFS(swapped[1]) - SignalMeasurement.rmsDBFS(swapped[0]) - 24) < 0.5)
        let silenced = try pipeline("[0, -1]")
        #expect(SignalMeasurement.peak(silenced[1]) == 0)
        #expect(SignalMeasurement.rmsDBFS(silenced[0]) > -12)
        let doubled = try pipeline("[1, 1]")
        #expect(doubled[0] == doubled[1])
    }

    @Test("a channel_map entry beyond its input's channels is an error at the map")
    func channelMapEntryOutOfRange() {
        let found = Self.problems("""
            nodes:
              - {id: t, kind: tone}
              - {id: map, kind: channel_map, map: [0, 2]}
            connections:
              - {from: t, to: map}
              - {from: map, to: output}
            """)
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.hasPrefix("3:39: node 'map': map entry 2 names no input channel: its input has 2 channels") == true, "\(found)")
    }

    @Test("a splitter with narrower outputs splits the channels apart; a merger joins them again")
    func splitterSplitsChannels() throws {
        let pipeline = try Self.build("""
            nodes:
              - {id: loud, kind: tone, channels: 1, parameters: {level: -6 dB}}
              - {id: quiet, kind: tone, channels: 1, parameters: {level: -30 dB}}
              - {id: pair, kind: merger}
              - {id: apart, kind: splitter, channels: {output: [1, 1]}}
              - {id: l, kind: Gain, parameters: {gain: -6 dB}}
              - {id: r, kind: Gain}
              - {id: again, kind: merger}
            connections:
              - {from: loud, to: "pair:0"}
              - {from: quiet, to: "pair:1"}
              - {from: pair, to: apart}
              - {from: "apart:0", to: l}
              - {from: "apart:1", to: r}
              - {from: l, to: "again:0"}
              - {from: r, to: "again:1"}
              - {from: again, to: output}
            """)
        #expect(Self.width(pipeline, "l", .input) == 1)
        let output = try Self.render(pipeline, frames: 4800)
        #expect(abs(SignalMeasurement.rmsDBFS(output[0]) - SignalMeasurement.rmsDBFS(output[1]) - 18) < 0.5)
    }

    @Test("a mono LV2 plugin in a stereo chain runs as two linked instances, its parameters on both")
    func monoPluginIsLinked() throws {
        let pipeline = try Self.build("""
            nodes:
              - {id: src, kind: tone, parameters: {level: -6 dB}}
              - {id: amp, kind: lv2, uri: "http://plugin.org.uk/swh-plugins/amp", parameters: {gain: -12}}
            connections:
              - {from: src, to: amp}
              - {from: amp, to: output}
            """)
        let linked = try #require(pipeline.node("amp")?.unit as? LV2LinkedUnit)
        #expect(linked.instances.count == 2)
        for instance in linked.instances { #expect(try instance.control("gain") == -12) }
        let output = try Self.render(pipeline, frames: 4800)
        for channel in output { #expect(abs(SignalMeasurement.rmsDBFS(channel) - (-6 - 3.01 - 12)) < 0.5) }
        // A change later (as `ctl set` makes it) reaches both instances.
        try linked.setParameter(try linked.instances[0].parameterID(symbol: "gain"), to: -3)
        for instance in linked.instances { #expect(try instance.control("gain") == -3) }
    }

    @Test("a mono plugin fed three channels of a two-channel plugin's width is refused with a suggestion")
    func unfillableWidthIsRefused() {
        let found = Self.problems("""
            engine: {channels: 3}
            nodes:
              - {id: src, kind: tone}
              - {id: comp, kind: lv2, uri: "urn:zamaudio:ZamCompX2"}
            connections:
              - {from: src, to: comp}
              - {from: comp, to: output}
            """)
        #expect(found.first?.contains("place a channel_map before it") == true, "\(found)")
    }

    @Test("save writes `channels:` as declared, and the saved file reads back the same")
    func saveKeepsDeclarations() throws {
        let folder = try TemporaryFolder(prefix: "sonora-channels-save")
        let configuration = try ConfigurationParser.parse("""
            nodes:
              - {id: loud, kind: tone, channels: 1}
              - {id: quiet, kind: tone, channels: 1}
              - {id: pair, kind: merger}
              - {id: apart, kind: splitter, channels: {output: [1, 1]}}
              - {id: again, kind: merger, channels: {input: [1, 1], output: 2}}
            connections:
              - {from: loud, to: "pair:0"}
              - {from: quiet, to: "pair:1"}
              - {from: pair, to: apart}
              - {from: "apart:0", to: "again:0"}
              - {from: "apart:1", to: "again:1"}
              - {from: again, to: output}
            """, file: folder.path + "/in.yaml")
        let pipeline = try PipelineBuilder.build(configuration, target: .offline)
        defer { pipeline.graph.uninitialize() }
        let controller = PipelineController(
            pipeline: pipeline, device: try TimerDevice(configuration: .init(), mode: .offline), configPath: configuration.file,
            logger: Logger(label: "test"))
        let saved = folder.path + "/saved.yaml"
        try controller.save(to: saved)
        let written = try String(contentsOfFile: saved, encoding: .utf8)
        #expect(written.contains("    channels: 1\n") && written.contains("    channels: {output: [1, 1]}\n"), "\(written)")
        let again = try ConfigurationParser.parse(contentsOf: saved)
        #expect(again.nodes.map { $0.channels?.yaml } == configuration.nodes.map { $0.channels?.yaml })
        #expect(PipelineBuilder.check(again, offline: true).isEmpty)
    }

    @Test("`channels:` is checked: a width out of range or the wrong shape is an error at the value")
    func declarationIsChecked() {
        let found = Self.problems("""
            nodes:
              - {id: t, kind: tone, channels: 0}
              - {id: g, kind: Gain, channels: {input: [1, 1]}}
              - {id: h, kind: Gain, channels: {inptu: 1}}
            connections:
              - {from: t, to: g}
              - {from: g, to: h}
              - {from: h, to: output}
            """)
        #expect(found.contains { $0.hasPrefix("2:35: channels of node 't' 0 is out of range 1…32") }, "\(found)")
        #expect(found.contains { $0.contains("'g'") && $0.contains("lists 2 input widths") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("4:36:") && $0.contains("inptu") }, "\(found)")
    }
}
