import Foundation
import Logging
import SonoraCore
import SonoraHAL
import SonoraPipeline
import SonoraTestSupport
import SonoraUnits
import Testing

/// `device: {…, voice_processing: on}`: what a config may say about it (every mistake at its
/// line and column), and the reserved node `voice` on the control socket of a pipeline
/// running on the null device.
@Suite("Pipeline configs: device voice processing and the `voice` node", .serialized)
struct VoiceProcessingConfigurationTests {
    static let scratch = try! TemporaryFolder(prefix: "sonora-voice-config")
    static var folder: String { scratch.path }

    static func write(_ name: String, _ text: String) -> String {
        let path = folder + "/" + name
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }

    /// `line:column: message` of every problem `sonora check` (or `--offline`) reports.
    static func check(_ name: String, _ text: String, offline: Bool = false) -> [String] {
        let path = write(name, text)
        do {
            let configuration = try ConfigurationParser.parse(contentsOf: path)
            return PipelineBuilder.check(configuration, offline: offline).map { "\($0.location.line):\($0.location.column): \($0.message)" }
        } catch {
            return error.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" }
        }
    }

    static func config(device: String, nodes: String = "  - {id: t, kind: tone}\n", connections: String = "  - {from: t, to: output}\n", extra: String = "") -> String {
        "engine: {sample_rate: 16000, period: 160, periods: 3, channels: 1}\ndevice: \(device)\nnodes:\n\(nodes)connections:\n\(connections)\(extra)"
    }

    @Test("voice processing with a capture and a playback checks clean, run and offline")
    func clean() {
        let text = Self.config(device: "{playback: null, capture: null, voice_processing: on}", extra: "status: {meters: [voice]}\n")
        #expect(Self.check("clean.yaml", text) == [])
        #expect(Self.check("clean-offline.yaml", text, offline: true) == [])
    }

    @Test("voice processing without a capture, or without a playback, is refused at the setting")
    func needsBothDirections() {
        let noCapture = Self.check("no-capture.yaml", Self.config(device: "{playback: null, voice_processing: on}"))
        #expect(noCapture.count == 1)
        #expect(noCapture.first?.hasPrefix("2:44: device.voice_processing: on needs device.capture") == true, "\(noCapture)")
        let noPlayback = Self.check("no-playback.yaml", Self.config(device: "\n  capture: null\n  playback: none\n  voice_processing: yes"))
        #expect(noPlayback.count == 1)
        #expect(noPlayback.first?.hasPrefix("5:21: device.voice_processing: on needs device.playback") == true, "\(noPlayback)")
    }

    @Test("a value that is not on or off is refused at the value")
    func badValue() {
        let found = Self.check("bad-value.yaml", Self.config(device: "{playback: null, capture: null, voice_processing: maybe}"))
        #expect(found == ["2:59: device.voice_processing must be true or false, not 'maybe'"])
    }

    @Test("`voice` is reserved: no node may take the id, and no connection may name it")
    func reservedID() {
        let node = Self.check("voice-node.yaml", Self.config(device: "{playback: null}", nodes: "  - {id: t, kind: tone}\n  - {id: voice, kind: Gain}\n"))
        #expect(node.contains { $0.hasPrefix("5:5: node id 'voice' is reserved for the device's voice processing") }, "\(node)")
        let connected = Self.check(
            "voice-connection.yaml",
            Self.config(device: "{playback: null, capture: null, voice_processing: on}", connections: "  - {from: t, to: output}\n  - {from: voice, to: t}\n"))
        #expect(connected.contains { $0.hasPrefix("7:12: `voice` is the device's voice processing, not a graph node") }, "\(connected)")
        let without = Self.check("voice-off.yaml", Self.config(device: "{playback: null}", extra: "status: {meters: [voice]}\n"))
        #expect(without == ["7:19: status.meters: no node 'voice'"], "\(without)")
    }

    @Test("Configs/intercom.yaml runs through the voice-processing I/O unit")
    func intercom() throws {
        let configuration = try ConfigurationParser.parse(contentsOf: PackageRoot.path("Configs/intercom.yaml"))
        #expect(configuration.device.voiceProcessing)
        #expect(configuration.device.capture != nil && configuration.device.playback != nil)
        #expect(!configuration.nodes.contains { $0.kind == "voice" }, "the intercom still cancels in a graph node")
        #expect(configuration.status.meters == ["voice"])
        #expect(PipelineBuilder.check(configuration).map(\.description) == [])
        #expect(PipelineBuilder.check(configuration, offline: true).map(\.description) == [])
    }

    /// The pipeline of `text` on the null device (capture and playback), with its control socket.
    static func running(_ text: String, name: String) throws -> (BuiltPipeline, PipelineController, ControlServer, any AudioDevice) {
        let path = write(name, text)
        let configuration = try ConfigurationParser.parse(contentsOf: path)
        let logger = Logger(label: "test")
        let device = try DeviceOpener.open(configuration, logger: logger)
        let pipeline = try PipelineBuilder.build(configuration, target: .live(device))
        let controller = PipelineController(pipeline: pipeline, device: device, configPath: path, logger: logger)
        let server = try ControlServer(path: folder + "/\(name).sock", logger: logger) { request in controller.handle(request) }
        server.start()
        return (pipeline, controller, server, device)
    }

    @Test("over the control socket `voice` lists, reads, sets and meters like any node")
    func controlSocket() throws {
        let text = Self.config(
            device: "{playback: null, capture: null, voice_processing: on}",
            nodes: "  - {id: t, kind: tone}\n  - {id: mic, kind: Meter}\n  - {id: mix, kind: mixer, inputs: 2}\n",
            connections: "  - {from: t, to: \"mix:0\"}\n  - {from: input, to: mic}\n  - {from: mic, to: \"mix:1\"}\n  - {from: mix, to: output}\n",
            extra: "control: {socket: control.sock}\n")
        let (pipeline, _, server, _) = try Self.running(text, name: "socket.yaml")
        defer { server.stop(); pipeline.graph.uninitialize() }
        try pipeline.graph.start()
        defer { pipeline.graph.stop() }
        let client = ControlClient(path: server.path)

        guard case .nodes(let nodes) = try client.send(.nodes) else { Issue.record("nodes"); return }
        let voice = try #require(nodes.first { $0.id == "voice" })
        #expect(voice.kind == "voice_processing")
        #expect(voice.unit.contains("vpio"), "\(voice.unit)")

        guard case .parameters(_, let parameters) = try client.send(.parameters(node: "voice")) else { Issue.record("params"); return }
        #expect(parameters.contains { $0.name == "Suppression Strength" && $0.writable })
        #expect(parameters.contains { $0.name == "ERLE (dB)" && !$0.writable })

        let strength = ControlRequest.ParameterSelector(node: "voice", parameter: .name("suppression strength"))
        guard case .parameter(let set) = try client.send(.set(strength, value: .number(0.8), ramp: nil)) else { Issue.record("set"); return }
        #expect(abs(set.value - 0.8) < 1e-6)
        guard case .parameter(let got) = try client.send(.get(strength)) else { Issue.record("get"); return }
        #expect(abs(got.value - 0.8) < 1e-6)
        // A meter is read, never set.
        let erle = ControlRequest.ParameterSelector(node: "voice", parameter: .name("erle_db"))
        guard case .parameter(let reading) = try client.send(.get(erle)) else { Issue.record("get erle_db"); return }
        #expect(reading.value >= 0)
        guard case .failure(let refused) = try client.send(.set(erle, value: .number(30), ramp: nil)) else { Issue.record("set erle_db"); return }
        #expect(refused.message.contains("read-only"))

        // The meters, under the names metrics exports, for the null device's silence.
        usleep(300_000)
        guard case .meters(let meters) = try client.send(.meters) else { Issue.record("meters"); return }
        let names = meters.filter { $0.node == "voice" }.map(\.meter)
        #expect(names == ["erle_db", "delay_ms", "double_talk", "drift_ppm", "echo_path_changes"])
        let delay = meters.first { $0.node == "voice" && $0.meter == "delay_ms" }
        #expect(delay?.unit == "ms")
        #expect(delay?.value == -1, "no echo on the null device, so no delay found: \(String(describing: delay))")
    }

    @Test("turning voice processing on or off takes a restart: a reload refuses it, naming the line")
    func reloadRefusesTheSwitch() throws {
        let on = Self.config(device: "{playback: null, capture: null, voice_processing: on}")
        let (pipeline, controller, server, _) = try Self.running(on, name: "reload.yaml")
        defer { server.stop(); pipeline.graph.uninitialize() }
        _ = Self.write("reload.yaml", Self.config(device: "{playback: null, capture: null, voice_processing: off}"))
        let problems = controller.serialized { controller.reload() }.map { "\($0.location.line):\($0.location.column): \($0.message)" }
        #expect(problems == ["2:59: device.voice_processing changed; it takes effect on restart, not on reload (nothing was changed)"])
        #expect(controller.pipeline.voiceNode != nil)
        // `ctl save` keeps it.
        let saved = Self.folder + "/saved.yaml"
        try controller.save(to: saved)
        #expect(try ConfigurationParser.parse(contentsOf: saved).device.voiceProcessing)
    }
}
