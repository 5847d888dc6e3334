import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The binary these tests run: $SONORA_TEST_BINARY (to see a test fail against an older
/// build) or the one `swift build` made.
let controlTestBinary: String? = ProcessInfo.processInfo.environment["SONORA_TEST_BINARY"] ?? sonoraBinary

private func ctl(_ arguments: String...) throws -> Outcome {
    try runProcess(controlTestBinary!, ["ctl"] + arguments)
}


/// What /proc says about a process: resident memory (kB) and threads.
private func processCounts(_ pid: Int32) -> (rssKilobytes: Int, threads: Int) {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    func field(_ name: String) -> Int {
        let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
        return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first { Int($0) != nil } ?? "") ?? -1
    }
    // Anonymous memory only: the debug binary's code pages fault in as new paths run
    // (seen: 42 MB of VmRSS on a fresh CI clone), which is no per-client cost.
    return (field("RssAnon"), field("Threads"))
}

/// A `sonora run` on the null device with a control socket, stopped when the test ends.
private final class RunningDaemon {
    let process: RunningCommand  // killed if still running when the daemon goes away
    let socket: String
    /// What it left, once `stop()` ended it.
    private(set) var outcome: CLIOutcome?

    init(config: String, socket: String, folder: String) throws {
        self.socket = socket
        let path = folder + "/run-\(UInt32.random(in: 0...UInt32.max)).yaml"
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        process = try CLIRunner(executable: controlTestBinary!).launch(["run", path])
        // Until it answers (a stale socket file may be there before the daemon is).
        var waited = 0
        while process.isRunning && waited < 400 && json(controlExchange(socket, "{\"cmd\":\"status\"}\n", timeout: 2))["ok"] as? Bool != true {
            usleep(25_000)
            waited += 1
        }
    }

    var isServing: Bool { FileManager.default.fileExists(atPath: socket) && process.isRunning }

    func stop() {
        if process.isRunning { process.signal(SIGTERM) }
        outcome = process.wait(timeout: 60)
    }
}

@Suite("sonora ctl and the control socket", .serialized, .enabled(if: controlTestBinary != nil, "the sonora binary is not built"))
struct ControlCLITests {
    /// Removed with its contents after each test.
    let scratch = try! TemporaryFolder(prefix: "sonora-control")
    var folder: String { scratch.path }

    func socketPath(_ name: String) -> String { "/tmp/sonora-ctl-\(getpid())-\(name).sock" }

    func config(socket: String, timeout: Double = 1) -> String {
        """
        engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
        device: {playback: "null"}
        nodes:
          - {id: a, kind: ToneGenerator, parameters: {frequency: 440 Hz, level: -12 dB}}
          - {id: b, kind: ToneGenerator, parameters: {frequency: 660 Hz, level: -12 dB}}
          - {id: mixer, kind: MultiChannelMixer, inputs: 2}
          - {id: trim, kind: Gain, parameters: {gain: -3 dB}}
          - {id: eq, kind: GraphicEQ}
          - {id: meter, kind: Meter}
        connections:
          - {from: a, to: "mixer:0"}
          - {from: b, to: "mixer:1"}
          - {from: mixer, to: trim}
          - {from: trim, to: eq}
          - {from: eq, to: meter}
          - {from: meter, to: output}
        control: {socket: \(socket), timeout: \(timeout)}
        status: {interval: 0}
        """
    }

    func volume(_ socket: String, element: Int) -> Double? {
        json(controlExchange(socket, "{\"cmd\":\"get\",\"node\":\"mixer\",\"param\":\"volume\",\"scope\":\"input\",\"element\":\(element)}\n"))["value"] as? Double
    }

    @Test("addressing on the socket: every field type- and range-checked, naming the field; nothing else changes")
    func addressing() throws {
        let socket = socketPath("addressing")
        let daemon = try RunningDaemon(config: config(socket: socket), socket: socket, folder: folder)
        defer { daemon.stop() }
        try #require(daemon.isServing, "the daemon did not start")
        let before = (volume(socket, element: 0), volume(socket, element: 1))
        try #require(before.0 != nil && before.1 != nil)

        let set = #"{"cmd":"set","node":"mixer","param":"volume","scope":"input","value":"-20 dB","element":"#
        let badElements: [(String, String)] = [
            (#""1""#, "bad-field"), ("1.5", "bad-field"), ("null", "bad-field"), ("[1]", "bad-field"),
            ("9223372036854775808", "out-of-range"), ("-1", "out-of-range"), ("2", "out-of-range"), ("{}", "bad-field"), ("true", "bad-field"),
        ]
        for (element, code) in badElements {
            let answer = json(controlExchange(socket, set + element + "}\n"))
            #expect(answer["ok"] as? Bool == false, "element \(element) was accepted")
            #expect(answer["code"] as? String == code, "element \(element): \(answer)")
            #expect(answer["field"] as? String == "element", "element \(element): \(answer)")
        }
        let scoped = #"{"cmd":"set","node":"mixer","param":"volume","element":1,"value":"-20 dB","scope":"#
        for scope in ["5", "null", #""inptu""#, "[\"input\"]"] {
            let answer = json(controlExchange(socket, scoped + scope + "}\n"))
            #expect(answer["ok"] as? Bool == false && answer["field"] as? String == "scope", "scope \(scope): \(answer)")
        }
        // A mistyped field is refused, not ignored (it would address element 0).
        let typo = json(controlExchange(socket, #"{"cmd":"set","node":"mixer","param":"volume","scope":"input","elemnt":1,"value":"-20 dB"}"# + "\n"))
        #expect(typo["code"] as? String == "unknown-field" && typo["field"] as? String == "elemnt")
        #expect((typo["error"] as? String)?.contains("did you mean 'element'?") == true)
        // A parameter in two scopes needs its scope.
        let ambiguous = json(controlExchange(socket, #"{"cmd":"set","node":"mixer","param":"volume","element":1,"value":"-20 dB"}"# + "\n"))
        #expect(ambiguous["code"] as? String == "missing-field" && ambiguous["field"] as? String == "scope")
        // Values: NaN and infinities are refused clearly, whatever form they come in.
        let valued = #"{"cmd":"set","node":"trim","param":"gain","value":"#
        for value in [#""nan""#, #""inf""#, #""-inf""#, "1e400", "null", "[1]"] {
            let answer = json(controlExchange(socket, valued + value + "}\n"))
            #expect(answer["ok"] as? Bool == false && answer["field"] as? String == "value", "value \(value): \(answer)")
        }
        #expect(json(controlExchange(socket, valued + "99}\n"))["code"] as? String == "out-of-range")
        for (field, value) in [("ramp", "-1"), ("ramp", "\"fast\""), ("node", "null"), ("node", "3"), ("param", "null"), ("param", "1.5")] {
            var fields = ["\"node\":\"trim\"", "\"param\":\"gain\"", "\"value\":1"].filter { !$0.hasPrefix("\"\(field)\"") }
            fields.append("\"\(field)\":\(value)")
            let answer = json(controlExchange(socket, "{\"cmd\":\"set\",\(fields.joined(separator: ","))}\n"))
            #expect(answer["ok"] as? Bool == false && answer["field"] as? String == field, "\(field) \(value): \(answer)")
        }
        // None of the refused requests touched the mixer.
        #expect(volume(socket, element: 0) == before.0)
        #expect(volume(socket, element: 1) == before.1)

        // The right address changes exactly that element.
        let good = json(controlExchange(socket, set + "1}\n"))
        #expect(good["ok"] as? Bool == true, "\(good)")
        #expect(good["element"] as? Int == 1 && good["scope"] as? String == "input")
        #expect(volume(socket, element: 1) != before.1)
        #expect(volume(socket, element: 0) == before.0)

        // Codes for the other failures; the protocol version.
        #expect(json(controlExchange(socket, "{not json\n"))["code"] as? String == "malformed-json")
        let unknown = json(controlExchange(socket, #"{"cmd":"stauts"}"# + "\n"))
        #expect(unknown["code"] as? String == "unknown-command" && (unknown["error"] as? String)?.contains("did you mean 'status'?") == true)
        #expect(json(controlExchange(socket, #"{"cmd":"params","node":"mixr"}"# + "\n"))["code"] as? String == "unknown-node")
        let version = json(controlExchange(socket, #"{"cmd":"version"}"# + "\n"))
        #expect(version["ok"] as? Bool == true && version["protocol"] as? Int == 1 && version["sonora"] is String)
        #expect(json(controlExchange(socket, #"{"cmd":"status","version":1}"# + "\n"))["ok"] as? Bool == true)
        let future = json(controlExchange(socket, #"{"cmd":"status","version":2}"# + "\n"))
        #expect(future["code"] as? String == "unsupported-version" && future["field"] as? String == "version")
    }

    @Test("sonora ctl: values starting with '-', options anywhere, bypass as 0/1/on/off, nan refused, human output for every command")
    func ctlPaperCuts() throws {
        let socket = socketPath("ctl")
        let daemon = try RunningDaemon(config: config(socket: socket, timeout: 5), socket: socket, folder: folder)
        defer { daemon.stop() }
        try #require(daemon.isServing, "the daemon did not start")

        let readme = try ctl("--socket", socket, "set", "trim", "gain", "-6dB")
        #expect(readme.status == 0, "\(readme.stderr)")
        #expect(readme.stdout.contains("Gain = -6 dB"), "\(readme.stdout)")
        let anywhere = try ctl("set", "mixer", "volume", "-3dB", "--socket", socket, "--scope", "input", "--element", "1", "--ramp", "0.1")
        #expect(anywhere.status == 0, "\(anywhere.stderr)")
        #expect(anywhere.stdout.contains("[input 1]"), "\(anywhere.stdout)")
        let negative = try ctl("--socket", socket, "set", "trim", "gain", "-7.5")
        #expect(negative.status == 0 && negative.stdout.contains("-7.5"), "\(negative.stderr)")

        for word in ["nan", "inf", "-inf"] {
            let outcome = try ctl("--socket", socket, "set", "trim", "gain", word)
            #expect(outcome.status != 0, "\(word)")
            #expect(outcome.stderr.contains("finite"), "\(word): \(outcome.stderr)")
            #expect(!outcome.stderr.contains("JSON"), "\(word): \(outcome.stderr)")
        }

        for (word, shown) in [("1", "true"), ("0", "false"), ("on", "true"), ("off", "false"), ("true", "true"), ("false", "false")] {
            let set = try ctl("--socket", socket, "property", "eq", "bypass", word)
            #expect(set.status == 0, "bypass \(word): \(set.stderr)")
            let get = try ctl("--socket", socket, "property", "eq", "bypass")
            #expect(get.stdout == "bypass = \(shown)\n", "bypass \(word): \(get.stdout)")
        }
        let badFlag = try ctl("--socket", socket, "property", "eq", "bypass", "maybe")
        #expect(badFlag.status != 0 && badFlag.stderr.contains("on or off"))

        // Every command prints something readable; --json prints the answer.
        let saved = folder + "/saved.yaml"
        let commands: [[String]] = [["nodes"], ["params", "trim"], ["get", "trim", "gain"], ["property", "eq", "preset"], ["property", "trim", "latency"],
                                    ["meters"], ["status"], ["version"], ["save", "--overwrite", saved]]
        for words in commands {
            let human = try runProcess(controlTestBinary!, ["ctl", "--socket", socket] + words)
            #expect(human.status == 0, "\(words): \(human.stderr)")
            #expect(!human.stdout.isEmpty && !human.stdout.contains("Optional(") && !human.stdout.hasPrefix("{"), "\(words): \(human.stdout)")
            let raw = try runProcess(controlTestBinary!, ["ctl", "--socket", socket, "--json"] + words)
            #expect(raw.status == 0 && json(raw.stdout)["ok"] as? Bool == true, "\(words) --json: \(raw.stdout)")
        }
        let refused = try ctl("--socket", socket, "save", saved)
        #expect(refused.status != 0 && refused.stderr.contains("exists; save with overwrite"), "\(refused.stderr)")
        let version = try ctl("--socket", socket, "version")
        let cliVersion = try runProcess(controlTestBinary!, ["--version"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(version.stdout.contains("sonora \(cliVersion), control protocol 1"), "\(version.stdout) vs \(cliVersion)")

        // Failures: exit 1, the reason and its code on stderr; --json still prints the answer.
        let missing = try ctl("--socket", socket, "get", "trim", "gian")
        #expect(missing.status == 1 && missing.stderr.contains("did you mean 'Gain'?") && missing.stderr.contains("unknown-parameter"), "\(missing.stderr)")
        let missingJSON = try ctl("--socket", socket, "--json", "get", "nope", "gain")
        #expect(missingJSON.status == 1 && json(missingJSON.stdout)["code"] as? String == "unknown-node")
        let typo = try ctl("--socket", socket, "stauts")
        #expect(typo.status != 0 && typo.stderr.contains("did you mean 'status'?"))
        let option = try ctl("--socket", socket, "get", "trim", "gain", "--scpoe", "input")
        #expect(option.status != 0 && option.stderr.contains("did you mean '--scope'?"), "\(option.stderr)")
    }

    @Test("ctl against a hung daemon gives up after --timeout with a clear error")
    func hungDaemon() throws {
        // A socket that accepts connections (the kernel's backlog) and never answers.
        let path = socketPath("hung")
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer {
            close(fd)
            unlink(path)
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        try #require(bound == 0 && listen(fd, 4) == 0)
        let outcome = try ctl("--socket", path, "--timeout", "0.5", "status")
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("no answer") && outcome.stderr.contains("0.5 s"), "\(outcome.stderr)")
        let bad = try ctl("--socket", path, "--timeout", "-1", "status")
        #expect(bad.status != 0 && bad.stderr.contains("--timeout"))
    }

    @Test("a client trickling one byte at a time is closed at its deadline, not kept alive by each byte")
    func tricklingClient() throws {
        let socket = socketPath("trickle")
        let daemon = try RunningDaemon(config: config(socket: socket, timeout: 1), socket: socket, folder: folder)
        defer { daemon.stop() }
        try #require(daemon.isServing, "the daemon did not start")
        let fd = try #require(UnixSocket.connect(socket))
        defer { close(fd) }
        // 17 bytes, one every 0.3 s: each byte comes well within 1 s of the last, the whole
        // request does not come within 1 s of its first byte.
        var sent = 0
        for byte in Array(#"{"cmd":"status"}"#.utf8) + [10] {
            var value = byte
            guard Glibc.send(fd, &value, 1, Int32(MSG_NOSIGNAL)) == 1 else { break }
            sent += 1
            usleep(300_000)
        }
        var time = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var answer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &answer, answer.count, 0)
        let text = count > 0 ? String(decoding: answer[0..<count], as: UTF8.self) : ""
        #expect(json(text.split(separator: "\n").first.map(String.init))["code"] as? String == "timeout", "after \(sent) bytes: \(text)")
        #expect(sent < 17, "the server kept reading a request past its deadline")
    }

    @Test("100 idle clients do not lock out a request; no thread and no megabytes per client")
    func idleClients() throws {
        let socket = socketPath("idle")
        let daemon = try RunningDaemon(config: config(socket: socket, timeout: 60), socket: socket, folder: folder)
        defer { daemon.stop() }
        try #require(daemon.isServing, "the daemon did not start")
        #expect(json(controlExchange(socket, "{\"cmd\":\"status\"}\n"))["ok"] as? Bool == true)
        let pid = daemon.process.processIdentifier
        var clients: [Int32] = []
        defer { clients.forEach { close($0) } }
        // A first few clients before the baseline: the server's first many-client poll round
        // touches pages once (seen: 8 MB on a loaded machine), which is not a per-client cost.
        for _ in 0..<8 { if let fd = UnixSocket.connect(socket) { clients.append(fd) } }
        #expect(json(controlExchange(socket, "{\"cmd\":\"status\"}\n"))["ok"] as? Bool == true)
        let before = processCounts(pid)
        for _ in 0..<56 { if let fd = UnixSocket.connect(socket) { clients.append(fd) } }
        #expect(clients.count == 64)
        #expect(json(controlExchange(socket, "{\"cmd\":\"status\"}\n"))["ok"] as? Bool == true)
        let after = processCounts(pid)
        print("8 → 64 idle clients: RSS \(before.rssKilobytes) → \(after.rssKilobytes) kB, threads \(before.threads) → \(after.threads)")
        #expect(after.threads <= before.threads + 1, "threads \(before.threads) → \(after.threads)")
        // A megabyte per client would be 56 MB here; 16 MB allows 290 kB each and no more.
        #expect(after.rssKilobytes - before.rssKilobytes < 16 * 1024, "RSS \(before.rssKilobytes) → \(after.rssKilobytes) kB")
        for _ in 0..<36 { if let fd = UnixSocket.connect(socket) { clients.append(fd) } }
        #expect(clients.count == 100)
        let answer = json(controlExchange(socket, "{\"cmd\":\"status\"}\n"))
        #expect(answer["ok"] as? Bool == true, "\(answer)")
        let ctlAnswer = try ctl("--socket", socket, "status")
        #expect(ctlAnswer.status == 0, "\(ctlAnswer.stderr)")
        // The oldest idle clients were closed with an error saying why.
        var line = [UInt8](repeating: 0, count: 1024)
        var time = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(clients[0], SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        let count = recv(clients[0], &line, line.count, 0)
        #expect(count > 0 && json(String(decoding: line[0..<max(count, 0)].prefix { $0 != 10 }, as: UTF8.self))["code"] as? String == "busy")
    }

    @Test("control.socket naming anything but a stale socket is refused; nothing is deleted", arguments: ["file", "config", "folder", "symlink", "long", "live"])
    func socketPathRefused(kind: String) throws {
        let base = folder + "/\(kind)"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        let configPath = base + "/run.yaml"
        var socket = base + "/target"
        var expected = ""
        var protected: [String: Data] = [:]
        var live: RunningDaemon?
        switch kind {
        case "file":
            try Data("precious\n".utf8).write(to: URL(fileURLWithPath: socket))
            protected[socket] = Data("precious\n".utf8)
            expected = "regular file"
        case "config":
            socket = configPath
            expected = "regular file"
        case "folder":
            try FileManager.default.createDirectory(atPath: socket, withIntermediateDirectories: true)
            expected = "folder"
        case "symlink":
            let target = base + "/real.txt"
            try Data("kept\n".utf8).write(to: URL(fileURLWithPath: target))
            try FileManager.default.createSymbolicLink(atPath: socket, withDestinationPath: target)
            protected[target] = Data("kept\n".utf8)
            expected = "not a socket"  // the config may resolve the link: then its target is named
        case "long":
            socket = "/tmp/" + String(repeating: "s", count: 108 - 5) + ".sock"
            expected = "at most 107"
        default:
            socket = socketPath("live")
            live = try RunningDaemon(config: config(socket: socket), socket: socket, folder: folder)
            try #require(live!.isServing)
            expected = "another process is serving"
        }
        defer { live?.stop() }
        let text = config(socket: socket)
        try text.write(toFile: configPath, atomically: true, encoding: .utf8)
        if kind == "config" { protected[configPath] = Data(text.utf8) }
        let outcome = try runProcess(controlTestBinary!, ["run", configPath, "--seconds", "0.3"])
        #expect(outcome.status != 0, "\(kind): run accepted \(socket)")
        #expect(outcome.stderr.contains(expected), "\(kind): \(outcome.stderr)")
        for (path, contents) in protected {
            #expect(FileManager.default.contents(atPath: path) == contents, "\(kind): \(path) changed or vanished")
        }
        if kind == "folder" {
            var isFolder: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: socket, isDirectory: &isFolder) && isFolder.boolValue)
        }
        if kind == "symlink" { #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: socket)) != nil) }
        if kind == "live" { #expect(live!.isServing && json(controlExchange(socket, "{\"cmd\":\"status\"}\n"))["ok"] as? Bool == true) }
    }

    @Test("a stale socket is replaced; a 107-byte path (the sun_path limit) works")
    func staleSocketReplaced() throws {
        for socket in [socketPath("stale"), "/tmp/" + String(repeating: "t", count: 107 - 5 - 5) + ".sock"] {
            #expect(socket.utf8.count <= 107)
            unlink(socket)
            // Left by a process that died: bound, never removed, nothing listening.
            let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(socket.utf8) + [0]) }
            let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
            close(fd)
            try #require(bound == 0)
            let daemon = try RunningDaemon(config: config(socket: socket), socket: socket, folder: folder)
            #expect(json(controlExchange(socket, "{\"cmd\":\"status\"}\n"))["ok"] as? Bool == true, "\(socket)")
            daemon.stop()
            #expect(daemon.outcome?.status == 0)
            #expect(!FileManager.default.fileExists(atPath: socket))
        }
    }
}
