import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// One line exchanged with a control socket (nil: closed without an answer).
func controlExchange(_ path: String, _ line: String, timeout: Int = 10) -> String? {
    guard let fd = UnixSocket.connect(path) else { return nil }
    defer { close(fd) }
    var time = timeval(tv_sec: timeout, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    if !line.isEmpty {
        let bytes = Array(line.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { break }
            offset += sent
        }
    }
    var answer = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 4096)
    while !answer.contains(10) {
        let count = recv(fd, &chunk, chunk.count, 0)
        if count <= 0 { break }
        answer += chunk[0..<count]
    }
    return answer.isEmpty ? nil : String(decoding: answer.prefix { $0 != 10 }, as: UTF8.self)
}

func json(_ text: String?) -> [String: Any] {
    guard let text, let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return [:] }
    return object
}

@Suite("sonora run, check, render and ctl", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct PipelineCLITests {
    /// Removed with its contents after each test.
    let scratch = try! TemporaryFolder(prefix: "sonora-pipeline")
    var folder: String { scratch.path }

    func config(gain: String, extraNode: Bool = false, socket: String, recording: String) -> String {
        """
        engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
        device: {playback: "null"}
        nodes:
          - {id: tone, kind: ToneGenerator, parameters: {frequency: 440 Hz, level: -6 dB}}
          - {id: g, kind: Gain, parameters: {gain: \(gain)}}
        \(extraNode ? "  - {id: g2, kind: Gain, parameters: {gain: -1 dB}}\n" : "")  - {id: meter, kind: Meter}
          - {id: rec, kind: recorder, file: \(recording)}
        connections:
          - {from: tone, to: g}
        \(extraNode ? "  - {from: g, to: g2}\n  - {from: g2, to: meter}\n" : "  - {from: g, to: meter}\n")  - {from: meter, to: rec}
          - {from: rec, to: output}
        control: {socket: \(socket), timeout: 1}
        status: {interval: 0.2}
        """
    }

    @Test("check: exit 0 for the shipped configs, exit 2 with positions for a broken one")
    func check() throws {
        for name in ["default.yaml", "mixer.yaml", "latency-loop.yaml"] {
            let outcome = try sonora("check", packageRoot.appendingPathComponent("Configs/\(name)").path)
            #expect(outcome.status == 0, "\(name): \(outcome.stderr)")
        }
        let broken = folder + "/broken.yaml"
        try "nodes:\n  - {id: x, kind: Gian}\nconnections:\n  - {from: x, to: output}\n".write(toFile: broken, atomically: true, encoding: .utf8)
        let outcome = try sonora("check", broken)
        #expect(outcome.status == 2)
        #expect(outcome.stderr.contains("broken.yaml:2:19: node 'x': unknown kind 'Gian'; did you mean 'Gain'?"))
        let schema = try sonora("schema")
        #expect(schema.status == 0 && schema.stdout.contains("\"$schema\""))
    }

    @Test("render is deterministic: the same bytes twice; the input file sets the length")
    func render() throws {
        let mixer = packageRoot.appendingPathComponent("Configs/mixer.yaml").path
        let a = folder + "/a.wav", b = folder + "/b.wav"
        #expect(try sonora("render", mixer, "--output", a, "--seconds", "1.5").status == 0)
        #expect(try sonora("render", mixer, "--output", b, "--seconds", "1.5").status == 0)
        #expect(FileManager.default.contents(atPath: a) == FileManager.default.contents(atPath: b))
        #expect((FileManager.default.contents(atPath: a)?.count ?? 0) > 72000 * 6)
        // The latency loop's `input` plays the given file offline.
        let loop = packageRoot.appendingPathComponent("Configs/latency-loop.yaml").path
        let melody = packageRoot.appendingPathComponent("Configs/sounds/melody.wav").path
        let rendered = try sonora("render", loop, "--input", melody, "--output", folder + "/loop.wav", "--json")
        #expect(rendered.status == 0, "\(rendered.stderr)")
        #expect(rendered.stdout.contains("\"frames\" : 307200"))  // 6.4 s at 48 kHz
        let missing = try sonora("render", mixer, "--output", folder + "/x.wav")
        #expect(missing.status != 0 && missing.stderr.contains("--seconds"))
    }

    @Test("every config in Configs/ renders offline", arguments: (try? FileManager.default.contentsOfDirectory(atPath: packageRoot.appendingPathComponent("Configs").path))?.filter { $0.hasSuffix(".yaml") }.sorted() ?? [])
    func shippedConfigsRender(name: String) throws {
        let config = packageRoot.appendingPathComponent("Configs/\(name)").path
        let melody = packageRoot.appendingPathComponent("Configs/sounds/melody.wav").path
        let output = folder + "/\(name).wav"
        let outcome = try sonora("render", config, "--input", melody, "--output", output, "--seconds", "1", "--json")
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("\"frames\" : 48000"))
        #expect(FileManager.default.fileExists(atPath: output))
    }

    @Test("run on the null device: control socket, reload on SIGHUP, SIGTERM finishes the recording")
    func runProcess() throws {
        let socket = "/tmp/sonora-test-\(getpid()).sock"
        let recording = folder + "/rec.wav"
        let configPath = folder + "/run.yaml"
        try config(gain: "-3 dB", socket: socket, recording: recording).write(toFile: configPath, atomically: true, encoding: .utf8)
        let process = try CLIRunner.sonora!.launch(["run", configPath])  // killed if the test ends first
        var waited = 0
        while !FileManager.default.fileExists(atPath: socket) && waited < 200 { usleep(50_000); waited += 1 }
        try #require(FileManager.default.fileExists(atPath: socket), "the socket never appeared")
        var attributes = stat()
        stat(socket, &attributes)
        #expect(attributes.st_mode & 0o777 == 0o600)

        // Requests.
        #expect(json(controlExchange(socket, "{\"cmd\":\"status\"}\n"))["ok"] as? Bool == true)
        let set = json(controlExchange(socket, "{\"cmd\":\"set\",\"node\":\"g\",\"param\":\"gain\",\"value\":\"-12 dB\"}\n"))
        #expect(set["ok"] as? Bool == true)
        #expect(json(controlExchange(socket, "{\"cmd\":\"get\",\"node\":\"g\",\"param\":\"gain\"}\n"))["value"] as? Double == -12)
        // The meter averages over 0.3 s: read until it has settled (a loaded machine runs the
        // null device's cycles late), for up to 5 s.
        var level: Double?
        for _ in 0..<50 {
            usleep(100_000)
            let meters = json(controlExchange(socket, "{\"cmd\":\"meters\"}\n"))["meters"] as? [[String: Any]] ?? []
            level = meters.first { $0["node"] as? String == "meter" && $0["meter"] as? String == "Average Power 0" }?["value"] as? Double
            if let level, level > -30 && level < -15 { break }
        }
        #expect(level != nil && level! > -30 && level! < -15, "tone at -6 dB through -12 dB: \(String(describing: level))")
        let ctl = try sonora("ctl", "--socket", socket, "get", "g", "gain")
        #expect(ctl.status == 0 && ctl.stdout.contains("-12"))

        // Abuse: each gets an error answer; the process keeps running.
        #expect(json(controlExchange(socket, "{not json\n"))["error"] as? String == "malformed JSON: {not json")
        #expect((json(controlExchange(socket, "{\"cmd\":\"explode\"}\n"))["error"] as? String)?.contains("unknown command 'explode'") == true)
        #expect((json(controlExchange(socket, "{\"cmd\":\"get\",\"node\":\"gg\",\"param\":\"gain\"}\n"))["error"] as? String)?.contains("no node 'gg'; did you mean 'g'?") == true)
        #expect((json(controlExchange(socket, "{\"cmd\":\"set\",\"node\":\"g\",\"param\":\"gain\",\"value\":99}\n"))["error"] as? String)?.contains("out of range") == true)
        #expect((json(controlExchange(socket, "[1,2]\n"))["error"] as? String)?.contains("JSON object") == true)
        let huge = "{\"cmd\":\"status\",\"pad\":\"" + String(repeating: "x", count: 70_000) + "\"}\n"
        #expect((json(controlExchange(socket, huge))["error"] as? String)?.contains("longer than 65536 bytes") == true)
        #expect((json(controlExchange(socket, "", timeout: 5))["error"] as? String)?.contains("timed out") == true)
        let answers = (0..<16).map { _ in DispatchQueue.global().sync { json(controlExchange(socket, "{\"cmd\":\"nodes\"}\n")) } }
        #expect(answers.allSatisfy { $0["ok"] as? Bool == true })
        // A second process may not take the socket.
        let second = try sonora("run", configPath, "--seconds", "1")
        #expect(second.status == 1 && second.stderr.contains("another process is serving"))

        // Reload: a changed gain and a new node, applied live.
        try config(gain: "-20 dB", extraNode: true, socket: socket, recording: recording).write(toFile: configPath, atomically: true, encoding: .utf8)
        process.signal(SIGHUP)
        var reloaded = false
        for _ in 0..<50 {
            usleep(100_000)
            let nodes = json(controlExchange(socket, "{\"cmd\":\"nodes\"}\n"))["nodes"] as? [[String: Any]] ?? []
            if nodes.contains(where: { $0["id"] as? String == "g2" }) { reloaded = true; break }
        }
        #expect(reloaded)
        usleep(200_000)
        #expect(json(controlExchange(socket, "{\"cmd\":\"get\",\"node\":\"g\",\"param\":\"gain\"}\n"))["value"] as? Double == -20)
        // An invalid file is refused and the running pipeline kept.
        try "nodes: [{id: g, kind: Nope}]\nconnections: []\n".write(toFile: configPath, atomically: true, encoding: .utf8)
        process.signal(SIGHUP)
        usleep(500_000)
        #expect(json(controlExchange(socket, "{\"cmd\":\"status\"}\n"))["ok"] as? Bool == true)
        // Save the running state as a config that checks clean.
        let saved = folder + "/saved.yaml"
        #expect(json(controlExchange(socket, "{\"cmd\":\"save\",\"path\":\"\(saved)\"}\n"))["ok"] as? Bool == true)
        // An existing file is replaced only when asked; the control socket, a folder never.
        let again = json(controlExchange(socket, "{\"cmd\":\"save\",\"path\":\"\(saved)\"}\n"))
        #expect(again["ok"] as? Bool == false && (again["error"] as? String)?.contains("exists; save with overwrite") == true, "\(again)")
        #expect(json(controlExchange(socket, "{\"cmd\":\"save\",\"path\":\"\(saved)\",\"overwrite\":true}\n"))["ok"] as? Bool == true)
        let overSocket = json(controlExchange(socket, "{\"cmd\":\"save\",\"path\":\"\(socket)\",\"overwrite\":true}\n"))
        #expect(overSocket["ok"] as? Bool == false && FileManager.default.fileExists(atPath: socket), "\(overSocket)")
        #expect(try sonora("check", saved).status == 0)
        #expect((try? String(contentsOfFile: saved, encoding: .utf8))?.contains("value: -20.0}  # Gain") == true)

        process.signal(SIGTERM)
        let outcome = process.wait(timeout: 60)
        let stderr = outcome.stderr
        let stdout = outcome.stdout
        #expect(outcome.status == 0, "\(stderr)")
        #expect(stdout.contains("status: ") && stdout.contains("xruns"))
        #expect(stderr.contains("reload refused; the running pipeline is unchanged"))
        #expect(!FileManager.default.fileExists(atPath: socket))
        let info = try sonora("info", recording, "--json")
        #expect(info.status == 0)
        let frames = json(info.stdout)["frames"] as? Int ?? 0
        #expect(frames > 48000)
    }
}
