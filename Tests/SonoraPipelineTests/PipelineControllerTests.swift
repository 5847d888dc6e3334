import Foundation
import Logging
import SonoraCore
import SonoraPipeline
import SonoraTestSupport
import SonoraUnits
import Testing

/// A pipeline built offline from YAML, driven through the typed protocol in process: no
/// socket, no process, no device thread.
private final class OfflineRig {
    let pipeline: BuiltPipeline
    let controller: PipelineController
    /// Removed with the rig.
    let scratch: TemporaryFolder
    var folder: String { scratch.path }

    init(_ yaml: String) throws {
        scratch = try TemporaryFolder(prefix: "sonora-controller")
        let file = scratch.path("pipeline.yaml")
        try yaml.write(toFile: file, atomically: true, encoding: .utf8)
        let configuration = try ConfigurationParser.parse(yaml, file: file)
        pipeline = try PipelineBuilder.build(configuration, target: .offline)
        // The controller's device answers `status`; it is opened, never started.
        let device = try DeviceOpener.open(configuration, logger: Logger(label: "test"))
        controller = PipelineController(pipeline: pipeline, device: device, configPath: file, logger: Logger(label: "test"))
    }

    /// Sends one request line, as the socket would.
    func send(_ line: String) -> ControlResponse {
        switch ControlRequest.decode(Array(line.utf8)) {
        case .success(let request): controller.handle(request)
        case .failure(let failure): .failure(failure)
        }
    }

    /// Renders `periods` periods; returns the peak of the last one.
    @discardableResult
    func render(periods: Int) throws -> Float {
        let period = pipeline.configuration.engine.periodFrames
        var peak: Float = 0
        var index = 0
        try pipeline.renderOffline(frames: period * periods) { list in
            index += 1
            guard index == periods else { return }
            peak = 0
            for channel in 0..<list.channelCount { for sample in list[channel] { peak = max(peak, abs(sample)) } }
        }
        return peak
    }

    func unit(_ id: String) -> AudioUnit { pipeline.node(id)!.unit }
}

private let mixerYAML = """
    engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
    device: {playback: "null"}
    nodes:
      - {id: a, kind: ToneGenerator, parameters: {frequency: 440 Hz, level: -6 dB}}
      - {id: b, kind: ToneGenerator, parameters: {frequency: 660 Hz, level: -6 dB}}
      - {id: mixer, kind: MultiChannelMixer, inputs: 2}
      - {id: trim, kind: Gain, parameters: {gain: 0 dB}}
      - {id: eq, kind: GraphicEQ}
      - {id: meter, kind: Meter}
    connections:
      - {from: a, to: "mixer:0"}
      - {from: b, to: "mixer:1"}
      - {from: mixer, to: trim}
      - {from: trim, to: eq}
      - {from: eq, to: meter}
      - {from: meter, to: output}
    """

private func failure(_ response: ControlResponse) -> ControlFailure? {
    if case .failure(let failure) = response { return failure }
    return nil
}

@Suite("PipelineController: requests on an offline pipeline")
struct PipelineControllerTests {
    let volume = MultiChannelMixerUnit.Parameter.volume

    @Test("a set addressed to mixer input 1 changes input 1 and nothing else")
    func addressedSet() throws {
        let rig = try OfflineRig(mixerYAML)
        let mixer = rig.unit("mixer")
        try rig.render(periods: 2)
        let answer = rig.send(#"{"cmd":"set","node":"mixer","param":"volume","scope":"input","element":1,"value":"-20 dB"}"#)
        guard case .parameter(let reading) = answer else { Issue.record("\(answer)"); return }
        #expect(reading.element == 1 && reading.scope == "input" && abs(reading.value - 0.1) < 1e-6)
        try rig.render(periods: 2)
        #expect(abs(try mixer.parameter(volume, scope: .input, element: 1) - 0.1) < 1e-6)
        #expect(try mixer.parameter(volume, scope: .input, element: 0) == 1)
        #expect(try mixer.parameter(volume, scope: .output, element: 0) == 1)
        // By ID too.
        _ = rig.send(#"{"cmd":"set","node":"mixer","param":0,"scope":"output","value":0.5}"#)
        #expect(try mixer.parameter(volume, scope: .output, element: 0) == 0.5)
        #expect(try mixer.parameter(volume, scope: .input, element: 0) == 1)
    }

    @Test("refused addresses change nothing", arguments: [
        #""element":"1""#, #""element":1.5"#, #""element":null"#, #""element":[1]"#, #""element":9223372036854775808"#,
        #""element":2"#, #""element":-1"#, #""scope":5,"element":1"#, #""scope":null,"element":1"#, #""scope":"global","element":1"#,
        #""element":1"#,  // no scope: volume is in the input and the output scope
    ])
    func refusedAddress(_ address: String) throws {
        let rig = try OfflineRig(mixerYAML)
        let mixer = rig.unit("mixer")
        let line = #"{"cmd":"set","node":"mixer","param":"volume","value":"-20 dB","# + (address.contains("scope") || address == #""element":1"# ? "" : #""scope":"input","#) + address + "}"
        let refused = try #require(failure(rig.send(line)), "accepted: \(line)")
        #expect(refused.field == "element" || refused.field == "scope", "\(refused)")
        try rig.render(periods: 1)
        for element in 0..<2 { #expect(try mixer.parameter(volume, scope: .input, element: element) == 1, "\(line)") }
        #expect(try mixer.parameter(volume, scope: .output, element: 0) == 1)
    }

    @Test("values: units, ranges, NaN, read-only meters; the audio follows")
    func values() throws {
        let rig = try OfflineRig(mixerYAML)
        let trim = rig.unit("trim")
        let loud = try rig.render(periods: 4)
        #expect(loud > 0.3)
        #expect(failure(rig.send(#"{"cmd":"set","node":"trim","param":"gain","value":"nan"}"#))?.field == "value")
        #expect(failure(rig.send(#"{"cmd":"set","node":"trim","param":"gain","value":"-inf"}"#))?.message.contains("finite") == true)
        #expect(failure(rig.send(#"{"cmd":"set","node":"trim","param":"gain","value":"1e999"}"#))?.code == .outOfRange)
        #expect(failure(rig.send(#"{"cmd":"set","node":"trim","param":"gain","value":99}"#))?.code == .outOfRange)
        #expect(failure(rig.send(#"{"cmd":"set","node":"trim","param":"gain","value":"loud"}"#))?.code == .badField)
        #expect(failure(rig.send(#"{"cmd":"set","node":"mixer","param":"Post Average Power 0","scope":"input","value":0}"#))?.code == .readOnly)
        #expect(failure(rig.send(#"{"cmd":"set","node":"trim","param":"gian","value":0}"#))?.message.contains("did you mean 'Gain'?") == true)
        #expect(failure(rig.send(#"{"cmd":"get","node":"trm","param":"gain"}"#))?.code == .unknownNode)
        #expect(try trim.parameter(0) == 0)
        let answer = rig.send(#"{"cmd":"set","node":"trim","param":"gain","value":"-40 dB"}"#)
        #expect(answer.isSuccess, "\(answer)")
        #expect(try trim.parameter(0) == -40)
        let quiet = try rig.render(periods: 8)
        #expect(quiet < loud / 50, "\(loud) → \(quiet)")
        // A ramp reports its target at once and reaches it in the audio.
        #expect(rig.send(#"{"cmd":"set","node":"trim","param":"gain","value":"0 dB","ramp":0.01}"#).isSuccess)
        #expect(try trim.parameter(0) == 0)
        #expect(try rig.render(periods: 8) > loud * 0.9)
    }

    @Test("properties, presets, listings, status, version")
    func properties() throws {
        let rig = try OfflineRig(mixerYAML)
        let eq = rig.unit("eq")
        #expect(rig.send(#"{"cmd":"set-property","node":"eq","property":"bypass","value":true}"#).isSuccess)
        #expect(eq.isBypassed)
        guard case .property(let bypass) = rig.send(#"{"cmd":"get-property","node":"eq","property":"bypass"}"#) else { Issue.record("no property"); return }
        #expect(bypass.value == .flag(true))
        #expect(failure(rig.send(#"{"cmd":"set-property","node":"eq","property":"bypass","value":"yes"}"#))?.field == "value")
        #expect(rig.send(#"{"cmd":"set-property","node":"eq","property":"preset","value":"jazz"}"#).isSuccess)
        #expect(eq.presentPreset?.name == "Jazz")
        let unknown = failure(rig.send(#"{"cmd":"set-property","node":"eq","property":"preset","value":"Jaz"}"#))
        #expect(unknown?.code == .unknownPreset && unknown?.message.contains("did you mean 'Jazz'?") == true)
        try rig.render(periods: 2)

        guard case .nodes(let nodes) = rig.send(#"{"cmd":"nodes"}"#) else { Issue.record("nodes"); return }
        #expect(nodes.map(\.id) == ["a", "b", "mixer", "trim", "eq", "meter"])
        guard case .parameters(_, let list) = rig.send(#"{"cmd":"params","node":"mixer"}"#) else { Issue.record("params"); return }
        #expect(list.filter { $0.name == "Volume" && $0.scope == "input" }.map(\.element) == [0, 1])
        guard case .meters(let meters) = rig.send(#"{"cmd":"meters"}"#) else { Issue.record("meters"); return }
        #expect(meters.contains { $0.node == "meter" })
        guard case .status(let status) = rig.send(#"{"cmd":"status"}"#) else { Issue.record("status"); return }
        #expect(status.device == "null" && !status.running)
        #expect(rig.send(#"{"cmd":"version"}"#) == .version(.current))
    }

    @Test("save writes the running values; reload refuses a broken file and keeps the pipeline")
    func saveAndReload() throws {
        let rig = try OfflineRig(mixerYAML)
        _ = rig.send(#"{"cmd":"set","node":"trim","param":"gain","value":"-9 dB"}"#)
        let saved = rig.folder + "/saved.yaml"
        #expect(rig.send(#"{"cmd":"save","path":""# + saved + #""}"#) == .saved(path: saved))
        #expect((try? String(contentsOfFile: saved, encoding: .utf8))?.contains("-9") == true)
        let missing = failure(rig.send(#"{"cmd":"save","path":"/nonexistent-folder/x.yaml"}"#))
        #expect(missing?.code == .failed && missing?.field == "path")
        try "nodes: [{id: g, kind: Nope}]\nconnections: []\n".write(toFile: rig.controller.configPath, atomically: true, encoding: .utf8)
        let refused = failure(rig.send(#"{"cmd":"reload"}"#))
        #expect(refused?.code == .reloadRefused && refused?.diagnostics?.isEmpty == false)
        #expect(try rig.unit("trim").parameter(0) == -9)
    }
}
