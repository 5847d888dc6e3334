import Foundation
import Logging
import SonoraCore
import SonoraHAL
import SonoraPipeline
import SonoraTestSupport
import SonoraUnits
import Testing

/// The defects issue 15 found in config handling, each as it was reported.
@Suite("Pipeline configs: positions, messages, check == run")
struct ConfigurationDefectTests {
    /// Removed when the test process exits.
    static let scratch = try! TemporaryFolder(prefix: "sonora-config-defects")
    static var folder: String { scratch.path }

    /// Writes `text` as a config in the test folder; returns its path.
    static func write(_ name: String, _ text: String) -> String {
        let path = folder + "/" + name
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }

    /// Parse and check a file, as `sonora check` does: `line:column: message` strings.
    static func check(path: String, offline: Bool = false) -> [String] {
        do {
            let configuration = try ConfigurationParser.parse(contentsOf: path)
            return PipelineBuilder.check(configuration, offline: offline).map { "\($0.location.line):\($0.location.column): \($0.message)" }
        } catch {
            return error.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" }
        }
    }

    static let tail = "connections:\n  - {from: t, to: output}\n"

    @Test("a duplicate key is reported at the key, without the file echoed")
    func duplicateKey() {
        let padding = String(repeating: "# filler line to make the file large\n", count: 20_000)
        let path = Self.write("dup.yaml", "engine: {sample_rate: 48000}\nnodes:\n  - {id: t, kind: tone}\n  - id: u\n    kind: tone\n    kind: Gain\n" + Self.tail + padding)
        let found = Self.check(path: path)
        #expect(found.count == 1)
        #expect(found.first?.hasPrefix("5:5: 'kind' appears more than once") == true, "\(found)")
        #expect((found.first?.count ?? 0) < 200, "the message echoes at most a short excerpt")
    }

    @Test("an unclosed flow mapping is reported where it opens")
    func unclosedFlowMapping() {
        let path = Self.write("flow.yaml", "engine: {sample_rate: 48000, period: 256\nnodes:\n  - {id: t, kind: tone}\n" + Self.tail)
        let found = Self.check(path: path)
        #expect(found.first?.hasPrefix("1:9: YAML syntax: this '{' is not closed") == true, "\(found)")
    }

    @Test("an unclosed quote is reported where it opens, not at the end of the file")
    func unclosedQuote() {
        let path = Self.write("quote.yaml", "nodes:\n  - {id: \"t, kind: tone}\n" + Self.tail + "# more\n# lines\n")
        let found = Self.check(path: path)
        #expect(found.first?.hasPrefix("2:10: YAML syntax: this quote is not closed") == true, "\(found)")
    }

    @Test("a key without its colon is reported at the key")
    func missingColon() {
        let path = Self.write("colon.yaml", "nodes:\n  - id: t\n    kind tone\n    parameters: {level: -6 dB}\n" + Self.tail)
        let found = Self.check(path: path)
        #expect(found.first?.hasPrefix("3:") == true, "\(found)")
    }

    @Test("invalid UTF-8 and NUL bytes are reported at their line and column")
    func bytesThatAreNoText() throws {
        let invalid = folder("utf.yaml", Data("nodes:\n  - {id: t".utf8) + Data([0xFF]) + Data(", kind: tone}\n".utf8))
        #expect(Self.check(path: invalid) == ["2:11: invalid UTF-8 (byte 0xFF): save the config as UTF-8 text"])
        let nul = folder("nul.yaml", Data("nodes:\n  - {id: t, kind: tone}".utf8) + Data([0]) + Data("\n".utf8))
        #expect(Self.check(path: nul) == ["2:24: a NUL byte: a config is text"])
    }

    private func folder(_ name: String, _ data: Data) -> String {
        let path = Self.folder + "/" + name
        FileManager.default.createFile(atPath: path, contents: data)
        return path
    }

    @Test("a megabyte-long kind gets a short message and no suggestion")
    func hugeKind() {
        let kind = String(repeating: "x", count: 1 << 20)
        let path = Self.write("huge.yaml", "nodes:\n  - {id: t, kind: \(kind)}\n" + Self.tail)
        let found = Self.check(path: path)
        #expect(found.count == 1)
        #expect(found.first?.hasPrefix("2:19: node 't': unknown kind 'xxx") == true)
        #expect((found.first?.count ?? .max) < 300)
        #expect(found.first?.contains("did you mean") == false)
    }

    @Test("`input` without a capture device: check refuses it as run does; --offline accepts it")
    func inputWithoutCapture() {
        let path = Self.write("input.yaml", "nodes:\n  - {id: t, kind: Gain}\nconnections:\n  - {from: input, to: t}\n  - {from: t, to: output}\n")
        #expect(Self.check(path: path) == ["4:12: `input` is the device's capture, but device.capture is not set (offline, `sonora render --input FILE` plays a file there)"])
        #expect(Self.check(path: path, offline: true) == [])
    }

    @Test("a status meter naming no node is refused at its position")
    func unknownMeter() {
        let path = Self.write("meters.yaml", "nodes:\n  - {id: t, kind: tone}\n" + Self.tail + "status: {meters: [t, mixr]}\n")
        #expect(Self.check(path: path) == ["5:22: status.meters: no node 'mixr'"])
    }

    @Test("control.socket naming a regular file — even the config itself — is refused; nothing is removed")
    func socketOverAFile() throws {
        let victim = Self.write("victim.txt", "keep me\n")
        let path = Self.write("socket-file.yaml", "nodes:\n  - {id: t, kind: tone}\n" + Self.tail + "control: {socket: victim.txt}\n")
        #expect(Self.check(path: path) == ["5:19: control.socket: \(victim) is a regular file, not a socket; it is never replaced — choose another path"])
        let itself = Self.write("socket-self.yaml", "nodes:\n  - {id: t, kind: tone}\n" + Self.tail + "control: {socket: socket-self.yaml}\n")
        #expect(Self.check(path: itself).first?.contains("is a regular file, not a socket") == true)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep me\n")
        #expect(FileManager.default.fileExists(atPath: itself))
    }

    @Test("control.socket naming a symbolic link is refused as a link, not followed")
    func socketOverASymlink() throws {
        let target = Self.write("link-target.txt", "keep\n")
        let link = Self.folder + "/ctl-link.sock"
        unlink(link)
        #expect(symlink(target, link) == 0)
        let path = Self.write("socket-link.yaml", "nodes:\n  - {id: t, kind: tone}\n" + Self.tail + "control: {socket: ctl-link.sock}\n")
        let found = Self.check(path: path)
        #expect(found.count == 1 && found[0].contains("\(link) is a symbolic link"), "\(found)")
    }

    @Test("a socket path over sun_path's limit is refused by check")
    func socketPathTooLong() {
        let long = "/tmp/" + String(repeating: "s", count: 120) + ".sock"
        let path = Self.write("socket-long.yaml", "nodes:\n  - {id: t, kind: tone}\n" + Self.tail + "control: {socket: \(long)}\n")
        let found = Self.check(path: path)
        #expect(found.count == 1 && found[0].hasPrefix("5:19: control.socket: ") && found[0].contains("at most 107"), "\(found)")
    }

    @Test("a relative control.socket resolves against the config's folder, as every other path")
    func relativeSocket() throws {
        let path = Self.write("relative.yaml", "nodes:\n  - {id: t, kind: tone}\n" + Self.tail + "control: {socket: run/ctl.sock}\n")
        let configuration = try ConfigurationParser.parse(contentsOf: path)
        #expect(configuration.socketPath == Self.folder + "/run/ctl.sock")
        #expect(Self.check(path: path) == ["5:19: control.socket: folder \(Self.folder)/run does not exist"])
    }

    @Test("a Meter on a 2-channel engine meters 2 channels, not 8")
    func meterChannels() throws {
        let configuration = try ConfigurationParser.parse("engine: {channels: 2}\nnodes:\n  - {id: m, kind: Meter}\nconnections:\n  - {from: m, to: output}\n", file: Self.folder + "/meter.yaml")
        let pipeline = try PipelineBuilder.build(configuration, target: .offline)
        defer { pipeline.graph.uninitialize() }
        let meters = try #require(pipeline.node("m")).unit.parameterDefinitions.filter { $0.info.flags.contains(.meterReadOnly) }
        #expect(meters.count == 4)  // average and peak, two channels
    }

    @Test("options are typed by their kind: a wrong type is named, an option of another kind is refused")
    func typedOptions() {
        let text = """
            nodes:
              - {id: p, kind: player, file: ../melody.wav, loop: sometimes}
              - {id: m, kind: mixer, inputs: many}
              - {id: g, kind: Gain, uri: "urn:x"}
              - {id: l, kind: lv2, uri: not a uri}
            connections:
              - {from: p, to: "m:0"}
              - {from: m, to: g}
              - {from: g, to: l}
              - {from: l, to: output}
            """
        let found = Self.check(path: Self.write("typed.yaml", text))
        #expect(found.contains("2:54: loop of node 'p' must be true or false, not 'sometimes'"), "\(found)")
        #expect(found.contains("3:34: inputs of node 'm' must be a whole number, not 'many'"), "\(found)")
        #expect(found.contains { $0.hasPrefix("4:25: node 'g': `uri` does not apply to Gain") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("5:29: uri of node 'l': 'not a uri' is not a URI") }, "\(found)")
    }

    @Test("the config format carries a version; another one is refused")
    func version() {
        #expect(Self.check(path: Self.write("v1.yaml", "version: 1\nnodes:\n  - {id: t, kind: tone}\n" + Self.tail)) == [])
        #expect(Self.check(path: Self.write("v2.yaml", "version: 2\nnodes:\n  - {id: t, kind: tone}\n" + Self.tail))
            == ["1:10: config format version 2 is not supported by this Sonora (it reads version 1)"])
    }
}

/// One description per node kind: everything that describes the format derives from it.
@Suite("Node kinds")
struct NodeKindTests {
    @Test("the schema has one node alternative per kind, with exactly its options")
    func schemaFollowsTheKinds() throws {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(ConfigurationSchema.json.utf8)) as? [String: Any])
        let nodes = try #require((object["properties"] as? [String: Any])?["nodes"] as? [String: Any])
        let alternatives = try #require((nodes["items"] as? [String: Any])?["oneOf"] as? [[String: Any]])
        let catalog = NodeKindCatalog.standard
        #expect(alternatives.count == catalog.kinds.count)
        for (kind, alternative) in zip(catalog.kinds, alternatives) {
            let keys = Set((alternative["properties"] as? [String: Any] ?? [:]).keys)
            #expect(keys == Set(NodeKind.commonKeys + kind.options.map(\.key)), "\(kind.name)")
        }
    }

    @Test("every kind and every option is documented in docs/pipelines.md")
    func documented() throws {
        let docs = try String(contentsOfFile: URL(fileURLWithPath: configsFolder).deletingLastPathComponent().appendingPathComponent("docs/pipelines.md").path, encoding: .utf8)
        for kind in NodeKindCatalog.standard.kinds {
            #expect(kind.names.contains { docs.contains("`\($0)`") }, "kind \(kind.name) is not in the reference")
            for option in kind.options { #expect(docs.contains("`\(option.key)`"), "option \(option.key) of \(kind.name)") }
        }
    }

    @Test("save writes each option as its type, and the saved file reads back the same")
    func saveRoundTrip() throws {
        let text = """
            nodes:
              - {id: p, kind: player, file: sounds/melody.wav, loop: yes}
              - {id: m, kind: mixer, inputs: 3}
            connections:
              - {from: p, to: "m:0"}
              - {from: m, to: output}
            """
        let configuration = try ConfigurationParser.parse(text, file: configsFolder + "/save.yaml")
        let pipeline = try PipelineBuilder.build(configuration, target: .offline)
        defer { pipeline.graph.uninitialize() }
        let saved = configsFolder + "/.save-roundtrip-\(getpid()).yaml"
        defer { unlink(saved) }
        let controller = PipelineController(pipeline: pipeline, device: try TimerDevice(configuration: .init(), mode: .offline), configPath: configuration.file, logger: Logger(label: "test"))
        try controller.save(to: saved)
        let written = try String(contentsOfFile: saved, encoding: .utf8)
        #expect(written.contains("    loop: true\n") && written.contains("    inputs: 3\n") && written.hasPrefix("# Saved") && written.contains("\nversion: 1\n"))
        let again = try ConfigurationParser.parse(contentsOf: saved)
        #expect(again.nodes.map { $0.options.mapValues(\.value) } == configuration.nodes.map { $0.options.mapValues(\.value) })
    }
}

/// The reloader on the offline device, in process.
@Suite("Pipeline reload", .serialized)
struct PipelineReloadTests {
    @Test("a reload after the player's file changed on disk plays the new audio")
    func changedFile() throws {
        let folder = ConfigurationDefectTests.folder + "/reload"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let sound = folder + "/sound.wav"
        func writeSound(volume: String) throws {
            _ = try CLIRunner(executable: "/usr/bin/sox").run(["-n", "-r", "48000", "-c", "2", "-b", "16", sound, "synth", "0.2", "sine", "1000", "vol", volume])
        }
        try writeSound(volume: "0.5")
        let config = folder + "/reload.yaml"
        FileManager.default.createFile(atPath: config, contents: Data("nodes:\n  - {id: p, kind: player, file: sound.wav, loop: true}\nconnections:\n  - {from: p, to: output}\n".utf8))
        let pipeline = try PipelineBuilder.build(try ConfigurationParser.parse(contentsOf: config), target: .offline)
        let controller = PipelineController(pipeline: pipeline, device: try TimerDevice(configuration: .init(), mode: .offline), configPath: config, logger: Logger(label: "test"))
        defer { controller.pipeline.graph.uninitialize() }
        func peak() throws -> Float {
            var peak: Float = 0
            try controller.pipeline.renderOffline(frames: 4800) { list in
                for channel in 0..<list.channelCount { for sample in list[channel] { peak = max(peak, abs(sample)) } }
            }
            return peak
        }
        #expect(abs(try peak() - 0.5) < 0.01)
        try writeSound(volume: "0.1")
        #expect(controller.reload().isEmpty)
        _ = try peak()  // the update lands at a cycle boundary; the old node fades out
        #expect(abs(try peak() - 0.1) < 0.01, "the reload kept the old audio")
    }

    @Test("a reload refuses a changed control socket, leaving the pipeline as it was")
    func socketChange() throws {
        let folder = ConfigurationDefectTests.folder
        let config = folder + "/reload-socket.yaml"
        FileManager.default.createFile(atPath: config, contents: Data("nodes:\n  - {id: t, kind: tone}\nconnections:\n  - {from: t, to: output}\ncontrol: {socket: a.sock}\n".utf8))
        let pipeline = try PipelineBuilder.build(try ConfigurationParser.parse(contentsOf: config), target: .offline)
        let controller = PipelineController(pipeline: pipeline, device: try TimerDevice(configuration: .init(), mode: .offline), configPath: config, logger: Logger(label: "test"))
        defer { controller.pipeline.graph.uninitialize() }
        FileManager.default.createFile(atPath: config, contents: Data("nodes:\n  - {id: t, kind: tone}\nconnections:\n  - {from: t, to: output}\ncontrol: {socket: b.sock}\n".utf8))
        let problems = controller.reload()
        #expect(problems.map(\.message) == ["control.socket changed; it takes effect on restart, not on reload (nothing was changed)"])
    }
}

@Suite("Pipeline configs: device names checked as run opens them")
struct DeviceNameCheckTests {
    @Test("a device name the HAL refuses, or one ALSA does not define, is refused by check at its line")
    func badNames() {
        let tail = "nodes:\n  - {id: t, kind: tone}\nconnections:\n  - {from: t, to: output}\n"
        let loopback = ConfigurationDefectTests.write("device-loopback.yaml", "device: {playback: loopback}\n" + tail)
        let found = ConfigurationDefectTests.check(path: loopback)
        #expect(found.count == 1 && found[0].hasPrefix("1:20: device.playback: ") && found[0].contains("sonoraloop"), "\(found)")
        let undefined = ConfigurationDefectTests.write("device-undefined.yaml", "device: {playback: no_such_pcm_here}\n" + tail)
        #expect(ConfigurationDefectTests.check(path: undefined) == ["1:20: device: no ALSA PCM called 'no_such_pcm_here' (`sonora devices` lists the PCMs ALSA knows)"])
        let fallback = ConfigurationDefectTests.write("device-fallback.yaml", "device: {playback: no_such_pcm_here, fallback: null}\n" + tail)
        #expect(ConfigurationDefectTests.check(path: fallback) == [])
    }
}
