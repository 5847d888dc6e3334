import Foundation
import Logging
import SonoraCore
import SonoraHAL
import SonoraPipeline
import SonoraTestSupport
import SonoraUnits
import Testing

/// The transport from a config's `transport:` section and the `transport` command, and LV2
/// patch properties through the `patch` command, driven through the typed protocol on an
/// offline pipeline (no socket, no device thread).
@Suite("Transport and patch properties over the control protocol", .serialized)
struct TransportControlTests {
    final class Rig {
        let pipeline: BuiltPipeline
        let controller: PipelineController
        let scratch: TemporaryFolder

        init(_ yaml: String) throws {
            scratch = try TemporaryFolder(prefix: "sonora-transport")
            let file = scratch.path("pipeline.yaml")
            try yaml.write(toFile: file, atomically: true, encoding: .utf8)
            let configuration = try ConfigurationParser.parse(yaml, file: file)
            pipeline = try PipelineBuilder.build(configuration, target: .offline)
            controller = PipelineController(
                pipeline: pipeline, device: try TimerDevice(configuration: .init(), mode: .offline), configPath: file,
                logger: Logger(label: "test"))
        }

        deinit { pipeline.graph.uninitialize() }

        func send(_ line: String) -> ControlResponse {
            switch ControlRequest.decode(Array(line.utf8)) {
            case .success(let request): controller.handle(request)
            case .failure(let failure): .failure(failure)
            }
        }

        func transport(_ line: String) throws -> ControlResponse.TransportReading {
            let response = send(line)
            guard case .transport(let reading) = response else { throw AudioError(.invalidPropertyValue, "\(line): \(response)") }
            return reading
        }

        func failure(_ line: String) -> ControlFailure? {
            if case .failure(let failure) = send(line) { return failure }
            return nil
        }

        func render(_ frames: Int) throws { try pipeline.renderOffline(frames: frames) { _ in } }
    }

    static let metroYAML = """
        engine: {sample_rate: 48000, period: 256, periods: 2, channels: 1}
        device: {playback: "null"}
        transport: {tempo: 90, meter: 3/4, playing: true}
        nodes:
          - {id: metro, kind: lv2, uri: "http://lv2plug.in/plugins/eg-metro"}
        connections:
          - {from: metro, to: output}
        """

    @Test func theConfigSetsTheTransportAndTheCommandChangesIt() throws {
        let rig = try Rig(Self.metroYAML)
        try rig.render(256)
        var now = try rig.transport(#"{"cmd":"transport"}"#)
        #expect(now.playing && now.tempo == 90 && now.meter == "3/4" && now.sampleTime == 256 && now.frame == 256)
        #expect(abs(now.beat - 256 * 1.5 / 48000) < 1e-9)
        // The eg-metro node heard the transport roll from its first frame: a click at once.
        _ = try rig.transport(#"{"cmd":"transport","action":"tempo","tempo":140}"#)
        _ = try rig.transport(#"{"cmd":"transport","action":"locate","beat":7}"#)
        try rig.render(256)
        now = try rig.transport(#"{"cmd":"transport"}"#)
        #expect(now.tempo == 140 && now.bar == 2 && abs(now.barBeat - (1 + 256 * 140 / 60 / 48000.0)) < 1e-9)
        _ = try rig.transport(#"{"cmd":"transport","action":"meter","meter":"6/8"}"#)
        _ = try rig.transport(#"{"cmd":"transport","action":"stop","at":700}"#)
        try rig.render(1024)
        now = try rig.transport(#"{"cmd":"transport"}"#)
        #expect(!now.playing && now.meter == "6/8")
        // Stopped at sample 700: 444 frames after the locate at 256, then still.
        #expect(now.frame == Int64((7 * 60 * 48000.0 / 140).rounded()) + 444)
        // `save` writes the transport as last set.
        let saved = rig.scratch.path("saved.yaml")
        try rig.controller.save(to: saved, overwrite: false)
        let again = try ConfigurationParser.parse(contentsOf: saved)
        #expect(again.transport?.tempo == 140 && again.transport?.timeSignature.description == "6/8" && again.transport?.isPlaying == false)
    }

    @Test func badTransportRequestsNameTheField() throws {
        let rig = try Rig(Self.metroYAML)
        let tempo = rig.failure(#"{"cmd":"transport","action":"tempo","tempo":0}"#)
        #expect(tempo?.code == .outOfRange && tempo?.field == "tempo")
        let action = rig.failure(#"{"cmd":"transport","action":"paly"}"#)
        #expect(action?.field == "action" && action?.message.contains("play") == true, "\(String(describing: action))")
        #expect(rig.failure(#"{"cmd":"transport","action":"locate"}"#)?.field == "beat")
        #expect(rig.failure(#"{"cmd":"transport","action":"play","tempo":3}"#)?.field == "tempo")
        #expect(rig.failure(#"{"cmd":"transport","action":"meter","meter":"7/3"}"#)?.field == "meter")
        #expect(rig.failure(#"{"cmd":"transport","at":5}"#)?.field == "at")
        #expect(rig.failure(#"{"cmd":"transport","action":"play","at":-1}"#)?.field == "at")
    }

    @Test func aBadTransportSectionIsReportedWhereItIs() throws {
        let yaml = """
            engine: {sample_rate: 48000, period: 256, channels: 1}
            transport:
              tempo: 2000
              meter: 4/5
              swing: 3
            nodes:
              - {id: metro, kind: lv2, uri: "http://lv2plug.in/plugins/eg-metro"}
            connections:
              - {from: metro, to: output}
            """
        do {
            _ = try ConfigurationParser.parse(yaml, file: "t.yaml")
            Issue.record("a bad transport section parsed")
        } catch {
            let text = error.diagnostics.map(\.description).joined(separator: "\n")
            #expect(text.contains("t.yaml:3:10: transport.tempo 2000.0 is out of range"), "\(text)")
            #expect(text.contains("t.yaml:4:10: transport.meter: a time signature's beat unit is"), "\(text)")
            #expect(text.contains("t.yaml:5:3: unknown key 'swing' in transport"), "\(text)")
        }
    }

    static let paramsYAML = """
        engine: {sample_rate: 48000, period: 256, periods: 2, channels: 1}
        device: {playback: "null"}
        nodes:
          - {id: params, kind: lv2, uri: "http://lv2plug.in/plugins/eg-params"}
        connections:
          - {from: params, to: output}
        """

    @Test func patchPropertiesByLabelURIAndURID() throws {
        let rig = try Rig(Self.paramsYAML)
        try rig.render(512)
        guard case .patch(let all) = rig.send(#"{"cmd":"patch","node":"params"}"#) else { Issue.record("no patch answer"); return }
        let float = try #require(all.properties.first { $0.label == "float" })
        #expect(float.uri == "http://lv2plug.in/plugins/eg-params#float" && float.writable && float.urid > 0)
        // By label: patch:Set reaches the plugin at the next cycle; its answer to patch:Get at the one after.
        guard case .patch = rig.send(#"{"cmd":"patch","node":"params","property":"float","value":0.25}"#) else {
            Issue.record("set by label refused"); return
        }
        try rig.render(512)
        guard case .patch(let read) = rig.send(#"{"cmd":"patch","node":"params","property":\#(float.urid)}"#) else {
            Issue.record("get by URID refused"); return
        }
        #expect(read.properties.map(\.label) == ["float"])
        #expect(read.properties.first?.value == .number(0.25), "\(read)")
        // By URI, an int.
        _ = rig.send(#"{"cmd":"patch","node":"params","property":"http://lv2plug.in/plugins/eg-params#int","value":7}"#)
        try rig.render(512)
        guard case .patch(let int) = rig.send(#"{"cmd":"patch","node":"params","property":"int"}"#) else { return }
        #expect(int.properties.first?.value == .number(7), "\(int)")
        let fraction = rig.failure(#"{"cmd":"patch","node":"params","property":"int","value":1.5}"#)
        #expect(fraction?.code == .outOfRange && fraction?.message.contains("whole number") == true)
        let unknown = rig.failure(#"{"cmd":"patch","node":"params","property":"flaot"}"#)
        #expect(unknown?.code == .unknownProperty && unknown?.message.contains("float") == true, "\(String(describing: unknown))")
        #expect(rig.failure(#"{"cmd":"patch","node":"params","property":999999}"#)?.code == .unknownProperty)
        #expect(rig.failure(#"{"cmd":"patch","node":"params","value":1}"#)?.field == "property")
        let notLV2 = try Rig(Self.metroYAML)
        #expect(notLV2.failure(#"{"cmd":"patch","node":"metro"}"#)?.message.contains("no patch properties") == true)
    }
}
