import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Several programs, one speaker: `sonora run` with a session section owns the (null)
/// device, other `sonora` processes play through it (`sonora:` devices) and hold sessions
/// (`sonora session activate`), and what the appliance played is recorded by the
/// appliance itself, so every fade, duck and resume is measured on its output.
@Suite("the appliance as session server (several processes)", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct SessionServerCLITests {
    let scratch = try! TemporaryFolder(prefix: "sonora-session")
    var folder: String { scratch.path }
    static let rate = 48000
    static let period = 256

    /// A running appliance: null device, every client into a recorder, control and session sockets.
    final class Appliance {
        let process: RunningCommand
        let sessionSocket: String
        let controlSocket: String
        let recording: String
        private(set) var outcome: CLIOutcome?

        init(
            folder: String, name: String, policy: String = SessionServerCLITests.policy, device: String = "\"null\"",
            period: Int = SessionServerCLITests.period, environment: [String: String]? = nil
        ) throws {
            sessionSocket = "/tmp/sonora-sess-\(getpid())-\(name).sock"
            controlSocket = "/tmp/sonora-sctl-\(getpid())-\(name).sock"
            recording = folder + "/\(name)-out.wav"
            let policyWithSocket = policy.replacingOccurrences(of: "session:\n", with: "session:\n  socket: \(sessionSocket)\n")
            let config = """
                engine: {sample_rate: \(SessionServerCLITests.rate), period: \(period), periods: 2, channels: 2}
                device: {playback: \(device)}
                control: {socket: \(controlSocket)}
                nodes:
                  - {id: clients, kind: clients}
                  - {id: rec, kind: recorder, file: \(recording)}
                connections:
                  - {from: clients, to: rec}
                  - {from: rec, to: output}
                \(policyWithSocket)
                """
            let path = folder + "/\(name).yaml"
            try config.write(toFile: path, atomically: true, encoding: .utf8)
            process = try CLIRunner(executable: sonoraBinary!).launch(["run", path], environment: environment)
            var waited = 0
            while process.isRunning && waited < 400 && UnixSocket.connect(sessionSocket).map({ close($0); return true }) != true {
                usleep(25_000)
                waited += 1
            }
        }

        deinit { if process.isRunning { process.signal(SIGKILL) } }

        var isServing: Bool { process.isRunning && UnixSocket.connect(sessionSocket).map { close($0); return true } == true }

        @discardableResult
        func stop() -> CLIOutcome {
            if let outcome { return outcome }
            process.signal(SIGTERM)
            let result = process.wait(timeout: 60)
            outcome = result
            return result
        }

        /// `sonora session …` against this appliance.
        func session(_ arguments: [String]) throws -> CLIOutcome {
            try CLIRunner(executable: sonoraBinary!).run(["session"] + arguments + ["--socket", sessionSocket])
        }

        func ctlNodes() throws -> [String: Any] {
            let outcome = try CLIRunner(executable: sonoraBinary!).run(["ctl", "--socket", controlSocket, "nodes", "--json"])
            return (try? JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any]) ?? [:]
        }

        /// The clients node's streams as `ctl nodes` lists them.
        func streams() throws -> [[String: Any]] {
            let nodes = try ctlNodes()["nodes"] as? [[String: Any]] ?? []
            return nodes.first { $0["id"] as? String == "clients" }?["streams"] as? [[String: Any]] ?? []
        }

        /// Channel 0 of what the appliance played (stops it first).
        func played(in folder: String) throws -> [Float] {
            stop()
            return try SessionServerCLITests.samples(recording, folder: folder)
        }
    }

    static let policy = """
        session:
          fade_ms: 30
          roles:
            - {name: intercom, priority: 30, interrupts: [media], may_record: true}
            - {name: alert, priority: 20, ducks: [media], duck_db: -12, attack_ms: 50, release_ms: 300, may_record: false}
            - {name: media, priority: 10, may_record: false}
          categories: {ambient: media, soloAmbient: media, playback: media, record: intercom, playAndRecord: intercom}
        """

    /// Channel 0 of a file, as floats (sox reads every format the recorder writes).
    static func samples(_ path: String, folder: String) throws -> [Float] {
        let raw = folder + "/\(UUID().uuidString).f32"
        _ = try runProcess("/usr/bin/sox", [path, "-t", "f32", "-c", "1", raw, "remix", "1"])
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// RMS level in dBFS of each period.
    static func periodLevels(_ samples: [Float]) -> [Double] {
        stride(from: 0, to: samples.count - period + 1, by: period).map { SignalMeasurement.rmsDBFS(samples[$0..<($0 + period)]) }
    }

    func tone(_ name: String, seconds: Double, frequency: Int = 1000) throws -> String {
        let path = folder + "/\(name).wav"
        _ = try runProcess("/usr/bin/sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", path, "synth", "\(seconds)", "sine", "\(frequency)", "vol", "0.5"])
        return path
    }

    func play(_ appliance: Appliance, _ file: String, extra: [String] = []) throws -> RunningCommand {
        try CLIRunner(executable: sonoraBinary!).launch(["play", "--device", "sonora:" + appliance.sessionSocket, "--json"] + extra + [file])
    }

    /// Waits until the appliance lists `count` playback streams (bounded).
    func waitForStreams(_ appliance: Appliance, count: Int) throws {
        for _ in 0..<400 {
            if try appliance.streams().filter({ $0["direction"] as? String == "playback" }).count >= count { return }
            usleep(25_000)
        }
    }

    @Test("an intercom activating interrupts the media stream: faded out within fade_ms, silent, then back when the intercom ends")
    func interruption() throws {
        let appliance = try Appliance(folder: folder, name: "interrupt")
        try #require(appliance.isServing, "the appliance did not start: \(appliance.stop().stderr)")
        let media = try play(appliance, try tone("media", seconds: 4))
        try waitForStreams(appliance, count: 1)
        usleep(300_000)
        let intercom = try appliance.session(["activate", "--category", "playAndRecord", "--role", "intercom", "--seconds", "1", "--name", "intercom", "--json"])
        #expect(intercom.status == 0, "\(intercom.stderr)")
        #expect(intercom.stdout.contains("\"role\":\"intercom\""))
        let played = media.wait(timeout: 30)
        #expect(played.status == 0, "\(played.stderr)")
        #expect(played.stdout.contains("\"sessionInterruptions\" : 1"), "the player was not told: \(played.stdout)")
        let levels = Self.periodLevels(try appliance.played(in: folder))
        // The player paused and played on: the whole 4 s tone is in the output, none lost in
        // the interruption beyond what played while the appliance faded it out (30 ms: the
        // program is told once the fade is over) and a period at each edge.
        let heard = levels.filter { $0 > -60 }.count * Self.period
        #expect(abs(heard - 4 * Self.rate) <= 1440 + 4 * Self.period, "\(heard) frames of the 4 s tone were heard")
        // Loud (the tone, −9 dBFS RMS), then silent (the interruption), then loud again.
        // The interruption is the longest silent stretch after the tone began (a period's
        // underrun on a loaded machine is no interruption).
        guard let firstLoud = levels.firstIndex(where: { $0 > -12 }) else {
            Issue.record("the tone never played: \(levels.map { Int($0) })")
            return
        }
        var longest = (start: 0, count: 0), run = (start: 0, count: 0)
        for index in firstLoud..<levels.count {
            if levels[index] < -90 {
                run = run.count == 0 ? (index, 1) : (run.start, run.count + 1)
                if run.count > longest.count { longest = run }
            } else {
                run = (0, 0)
            }
        }
        let silent = longest.start, back = longest.start + longest.count
        // Silent for about the intercom's second (the session is held 1 s), then the tone again.
        #expect(longest.count * Self.period >= Self.rate / 2, "silent for only \(longest.count * Self.period) frames: \(levels.map { Int($0) })")
        #expect(back < levels.count && levels[back...].contains { $0 > -12 }, "the tone did not come back")
        // Faded, not cut: from full level to silence through intermediate levels, within
        // 30 ms (1,440 frames) and a period.
        let lastFull = levels[..<silent].lastIndex(where: { $0 > -10 }) ?? silent
        let fade = levels[(lastFull + 1)..<silent]
        #expect(fade.count >= 2 && fade.count * Self.period <= 1440 + Self.period, "fade-out: \(fade.map { Int($0) })")
    }

    @Test("a chime with duck-others lowers the media by the policy's 12 dB, measured on the output, and restores it")
    func duck() throws {
        let appliance = try Appliance(folder: folder, name: "duck")
        try #require(appliance.isServing, "the appliance did not start: \(appliance.stop().stderr)")
        let media = try play(appliance, try tone("media", seconds: 3.5))
        try waitForStreams(appliance, count: 1)
        usleep(300_000)
        let alert = try appliance.session(["activate", "--category", "playback", "--option", "duckOthers", "--role", "alert", "--seconds", "1", "--name", "chime"])
        #expect(alert.status == 0, "\(alert.stderr)")
        let played = media.wait(timeout: 30)
        #expect(played.stdout.contains("\"sessionDucks\" : 1") && played.stdout.contains("\"sessionInterruptions\" : 0"), "\(played.stdout)")
        let levels = Self.periodLevels(try appliance.played(in: folder))
        guard let firstLoud = levels.firstIndex(where: { $0 > -12 }) else {
            Issue.record("the media never played: \(levels.map { Int($0) })")
            return
        }
        let full = levels[firstLoud + 4]
        // The ducked stretch: periods 12 dB (± 1) under full level, held for most of the second.
        let ducked = levels.indices.filter { abs(levels[$0] - (full - 12)) < 1 }
        #expect(ducked.count * Self.period >= Self.rate / 2, "only \(ducked.count) periods at \(full - 12) dB: \(levels.map { Int($0) })")
        // Restored: full level again after the duck.
        if let lastDucked = ducked.last {
            #expect(levels[(lastDucked + 1)...].contains { abs($0 - full) < 0.5 }, "not restored to \(full) dB after the duck")
        }
    }

    @Test("an ambient session mixes: the media is neither interrupted nor ducked, and status says so")
    func ambientMixes() throws {
        let appliance = try Appliance(folder: folder, name: "ambient")
        try #require(appliance.isServing)
        // Looping until told to stop: however slow the machine, it plays throughout.
        let media = try play(appliance, try tone("media", seconds: 1), extra: ["--loop"])
        try waitForStreams(appliance, count: 1)
        let ambient = try CLIRunner(executable: sonoraBinary!).launch(
            ["session", "activate", "--socket", appliance.sessionSocket, "--category", "ambient", "--seconds", "0.8", "--name", "game", "--json"])
        var status = try appliance.session(["status", "--json"])
        for _ in 0..<100 where !status.stdout.contains("\"game\"") {
            usleep(50_000)
            status = try appliance.session(["status", "--json"])
        }
        let clients = (try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["clients"] as? [[String: Any]] ?? []
        #expect(clients.count == 2, "\(status.stdout) \(status.stderr)")
        #expect(clients.allSatisfy { $0["interrupted"] as? Bool == false && $0["duckedDB"] == nil }, "\(status.stdout)")
        #expect(clients.contains { $0["name"] as? String == "game" && $0["category"] as? String == "ambient" && $0["active"] as? Bool == true })
        let gameEvents = ambient.wait(timeout: 30)
        #expect(gameEvents.status == 0 && !gameEvents.stdout.contains("interruption"), "\(gameEvents.stdout)")
        // The media keeps playing a while after the game's 0.8 s, so the tone lasts well over 1 s
        // however quickly the game's session came and went.
        usleep(500_000)
        media.signal(SIGINT)
        #expect(media.wait(timeout: 30).status == 0)
        let levels = Self.periodLevels(try appliance.played(in: folder))
        // Nothing cut the tone: over 1 s at full level, nearly every period of it, and no silence longer than
        // a couple of periods inside it (a lone period's underrun on a busy machine is no
        // interruption, which would be silent for the whole 0.8 s).
        let first = levels.firstIndex { $0 > -12 } ?? 0, last = levels.lastIndex { $0 > -12 } ?? 0
        let loud = levels[first...last].filter { $0 > -12 }.count
        #expect(loud * Self.period >= Self.rate, "the tone played \(loud) periods")
        #expect(loud * 20 >= (last - first + 1) * 19, "only \(loud) of \(last - first + 1) periods loud inside the tone")
        var gap = 0, longestGap = 0
        for level in levels[first...last] {
            gap = level < -60 ? gap + 1 : 0
            longestGap = max(longestGap, gap)
        }
        #expect(longestGap <= 2, "a silence of \(longestGap) periods inside the tone")
    }

    @Test("activation the policy refuses exits 1 with the reason, the status code and who holds the device")
    func refusal() throws {
        let appliance = try Appliance(folder: folder, name: "refuse")
        try #require(appliance.isServing)
        let intercom = try CLIRunner(executable: sonoraBinary!).launch(
            ["session", "activate", "--socket", appliance.sessionSocket, "--category", "playAndRecord", "--role", "intercom", "--seconds", "60", "--name", "doorphone"])
        var seen = ""
        for _ in 0..<200 {
            seen = try appliance.session(["status"]).stdout
            if seen.contains("doorphone") { break }
            usleep(25_000)
        }
        let media = try appliance.session(["activate", "--category", "playback", "--seconds", "0.1", "--name", "radio"])
        if media.status == 0 { Issue.record("status \(seen); after: \(try appliance.session(["status"]).stdout); the intercom's session: \(intercom.wait(timeout: 10))") }
        #expect(media.status == 1)
        #expect(media.stderr.contains("'!pri'"), "\(media.stderr)")
        #expect(media.stderr.contains("doorphone") && media.stderr.contains("intercom"), "the holder is not named: \(media.stderr)")
        // A player asking to play as media is refused the same way, before it plays a frame.
        let player = try CLIRunner(executable: sonoraBinary!).run(["play", "--device", "sonora:" + appliance.sessionSocket, "--role", "media", try tone("refused", seconds: 0.2)])
        #expect(player.status == 1 && player.stderr.contains("'!pri'") && player.stderr.contains("doorphone"), "\(player.stderr)")
        let unknown = try appliance.session(["activate", "--category", "playbak", "--seconds", "0.1"])
        #expect(unknown.status == 1 && unknown.stderr.contains("playback"), "no suggestion: \(unknown.stderr)")
        // SIGTERM ends the held session cleanly (deactivated, told to the others).
        intercom.signal(SIGTERM)
        let ended = intercom.wait(timeout: 30)
        #expect(ended.status == 0 && ended.stdout.contains("deactivated"), "\(ended)")
    }

    @Test("a program may record only in a role the policy lets record: refused at the device, with the reason")
    func recordingRefused() throws {
        let mediaRecords = Self.policy.replacingOccurrences(of: "record: intercom", with: "record: media")
        let appliance = try Appliance(folder: folder, name: "norecord", policy: mediaRecords)
        try #require(appliance.isServing)
        let take = folder + "/take.wav"
        let record = try CLIRunner(executable: sonoraBinary!).run(["record", "--device", "sonora:" + appliance.sessionSocket, "--seconds", "0.2", take])
        #expect(record.status != 0, "a media-role program recorded")
        #expect(record.stderr.contains("may not record") || record.stderr.contains("record"), "\(record.stderr)")
        #expect(!FileManager.default.fileExists(atPath: take))
        // With the intercom policy (record → intercom, which may record) the same command records.
        let allowed = try Appliance(folder: folder, name: "records")
        try #require(allowed.isServing)
        let granted = try CLIRunner(executable: sonoraBinary!).run(["record", "--device", "sonora:" + allowed.sessionSocket, "--seconds", "0.2", take])
        #expect(granted.status == 0, "\(granted.stderr)")
        #expect(FileManager.default.fileExists(atPath: take))
    }

    @Test("a client stopped (SIGSTOP) and then killed (SIGKILL) mid-stream: the other stream plays on intact, the dead stream is reclaimed")
    func stoppedAndKilledClient() throws {
        let appliance = try Appliance(folder: folder, name: "kill")
        try #require(appliance.isServing)
        // Both loop until told to stop: however slow the machine, both play throughout.
        let steady = try play(appliance, try tone("steady", seconds: 1, frequency: 1000), extra: ["--loop"])
        let victim = try play(appliance, try tone("victim", seconds: 1, frequency: 3000), extra: ["--loop"])
        try waitForStreams(appliance, count: 2)
        usleep(300_000)
        victim.signal(SIGSTOP)
        usleep(500_000)
        let stalled = try appliance.streams()
        #expect(stalled.count == 2, "\(stalled)")
        #expect(stalled.contains { ($0["underruns"] as? Int ?? 0) > 0 }, "the stopped client's stream did not underrun: \(stalled)")
        victim.signal(SIGKILL)
        _ = victim.wait(timeout: 10)
        var remaining = try appliance.streams()
        for _ in 0..<200 where remaining.count != 1 {
            usleep(25_000)
            remaining = try appliance.streams()
        }
        #expect(remaining.count == 1, "the dead client's stream is still there: \(remaining)")
        // (Its underruns are not judged: a looping client shows a few even on a quiet machine —
        // an open question of the client side, see the session note. The output is judged below.)
        #expect(remaining.first?["faulted"] as? Int == 0 || remaining.first?["faulted"] as? Bool == false, "\(remaining)")
        usleep(500_000)
        steady.signal(SIGINT)
        let steadyOutcome = steady.wait(timeout: 30)
        #expect(steadyOutcome.status == 0, "\(steadyOutcome.stderr)")
        let samples = try appliance.played(in: folder)
        #expect(appliance.outcome?.status == 0)
        // The last 0.3 s the steady program played: its 1 kHz whole, nothing left of the dead one's 3 kHz.
        let levels = Self.periodLevels(samples)
        guard let lastLoud = levels.lastIndex(where: { $0 > -12 }), lastLoud * Self.period > Self.rate / 2 else {
            Issue.record("the steady tone is not in the output: \(levels.map { Int($0) })")
            return
        }
        let end = lastLoud * Self.period
        let tail = Array(samples[(end - Self.rate * 3 / 10)..<end])
        #expect(SignalMeasurement.amplitude(of: tail, frequency: 1000, sampleRate: Double(Self.rate)) > 0.45)
        #expect(SignalMeasurement.amplitude(of: tail, frequency: 3000, sampleRate: Double(Self.rate)) < 0.001)
    }

    @Test("malformed and forged messages are refused with a reason; the appliance keeps serving")
    func hostileMessages() throws {
        let appliance = try Appliance(folder: folder, name: "hostile")
        try #require(appliance.isServing)
        func exchange(_ text: String) -> String {
            guard let fd = UnixSocket.connect(appliance.sessionSocket) else { return "" }
            defer { close(fd) }
            _ = text.withCString { write(fd, $0, strlen($0)) }
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var reply = [UInt8](repeating: 0, count: 65536)
            var got = 0
            while got < reply.count {
                let count = reply.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, $0.count - got) }
                if count <= 0 { break }
                got += count
                if reply[..<got].filter({ $0 == UInt8(ascii: "\n") }).count >= text.filter({ $0 == "\n" }).count { break }
            }
            return String(decoding: reply[..<got], as: UTF8.self)
        }
        #expect(exchange("not json\n").contains("\"ok\":false"))
        #expect(exchange("{\"id\":1,\"op\":\"session_activate\",\"category\":42}\n").contains("\"ok\":false"))
        let hello = "{\"id\":1,\"op\":\"hello\",\"name\":\"evil\"}\n"
        #expect(exchange(hello + "{\"id\":2,\"op\":\"session_activate\",\"category\":\"playback\",\"options\":[\"nope\"]}\n").contains("nope"))
        #expect(exchange(hello + "{\"id\":2,\"op\":\"open_stream\",\"direction\":\"playback\",\"channels\":100000}\n").contains("\"ok\":false"))
        #expect(exchange(hello + "{\"id\":2,\"op\":\"close_stream\",\"stream\":-7}\n").contains("\"ok\":false"))
        _ = exchange(String(repeating: "x", count: 70_000) + "\n")
        #expect(appliance.isServing)
        // Another program's stream is not this connection's to close (nor to map: its
        // memory went to its owner only).
        let media = try play(appliance, try tone("owned", seconds: 1), extra: ["--loop"])
        try waitForStreams(appliance, count: 1)
        guard let owned = try appliance.streams().first?["stream"] as? Int else {
            Issue.record("the player's stream never appeared: \(media.wait(timeout: 30))")
            return
        }
        #expect(exchange(hello + "{\"id\":2,\"op\":\"close_stream\",\"stream\":\(owned)}\n").contains("has no stream"))
        let after = try appliance.streams()
        #expect(after.count == 1 && after.first?["stream"] as? Int == owned, "\(after)")
        media.signal(SIGINT)
        #expect(media.wait(timeout: 30).status == 0)
        let status = try appliance.session(["status"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(appliance.stop().status == 0)
    }

    @Test("the appliance's device unplugged and plugged back: every attached program gets the route changes, in order")
    func routeChanges() throws {
        let unplugged = folder + "/unplugged"
        try FileManager.default.createDirectory(atPath: unplugged, withIntermediateDirectories: true)
        var environment = ProcessInfo.processInfo.environment
        environment["SONORALOOP_UNPLUG_DIR"] = unplugged
        let loop = "route\(getpid())"
        let appliance = try Appliance(folder: folder, name: "route", device: "sonoraloop:\(loop)", environment: environment)
        try #require(appliance.isServing, "\(appliance.stop().stderr)")
        let program = try CLIRunner(executable: sonoraBinary!).launch(
            ["session", "activate", "--socket", appliance.sessionSocket, "--category", "playback", "--seconds", "60", "--name", "radio", "--json"])
        for _ in 0..<200 {
            if try appliance.session(["status"]).stdout.contains("radio") { break }
            usleep(25_000)
        }
        // Pulled out: the appliance's device fails; plugged back: it re-opens it.
        FileManager.default.createFile(atPath: unplugged + "/" + loop, contents: nil)
        usleep(800_000)
        try FileManager.default.removeItem(atPath: unplugged + "/" + loop)
        // The driver re-opens with back-off (50 ms, doubling): back well within three seconds.
        usleep(3_000_000)
        let status = try CLIRunner(executable: sonoraBinary!).run(["ctl", "--socket", appliance.controlSocket, "status", "--json"])
        let report = ((try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8))) as? [String: Any])?["status"] as? [String: Any]
        #expect(report?["interruptions"] as? Int == 1 && report?["running"] as? Bool == true, "\(status.stdout)")
        program.signal(SIGTERM)
        let events = program.wait(timeout: 30).stdout.split(separator: "\n").map(String.init)
        let reasons = events.filter { $0.contains("route_change") }.map { line -> String in
            line.contains("oldDeviceUnavailable") ? "old" : line.contains("newDeviceAvailable") ? "new" : line
        }
        #expect(reasons.starts(with: ["old", "new"]), "route changes: \(events)")
    }

    @Test("the appliance moved to another device (ctl device, then a reload): attached programs hear route changes for the override; a device that cannot open is refused and nothing changes")
    func deviceSwitch() throws {
        let appliance = try Appliance(folder: folder, name: "switch")
        try #require(appliance.isServing, "\(appliance.stop().stderr)")
        let program = try CLIRunner(executable: sonoraBinary!).launch(
            ["session", "activate", "--socket", appliance.sessionSocket, "--category", "playback", "--seconds", "60", "--name", "radio", "--json"])
        for _ in 0..<200 {
            if try appliance.session(["status"]).stdout.contains("radio") { break }
            usleep(25_000)
        }
        let ctl = CLIRunner(executable: sonoraBinary!)
        let loop = "sonoraloop:switch\(getpid())"
        let switched = try ctl.run(["ctl", "--socket", appliance.controlSocket, "device", loop])
        #expect(switched.status == 0 && switched.stdout.contains("device: alsa") && switched.stdout.contains("running: true"), "\(switched.stdout) \(switched.stderr)")
        // A PCM that does not exist: refused with the reason, still on the loop device.
        let refused = try ctl.run(["ctl", "--socket", appliance.controlSocket, "device", "hw:97"])
        #expect(refused.status == 1 && refused.stderr.contains("hw:97") && refused.stderr.contains("still on"), "\(refused.stderr)")
        let status = try ctl.run(["ctl", "--socket", appliance.controlSocket, "status", "--json"])
        let report = ((try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8))) as? [String: Any])?["status"] as? [String: Any]
        #expect(report?["device"] as? String == "alsa" && report?["running"] as? Bool == true, "\(status.stdout)")
        // The config file still names the null device: a reload goes back to it, live.
        let reloaded = try ctl.run(["ctl", "--socket", appliance.controlSocket, "reload"])
        #expect(reloaded.status == 0, "\(reloaded.stderr)")
        let back = try ctl.run(["ctl", "--socket", appliance.controlSocket, "status"])
        #expect(back.stdout.contains("device: null") && back.stdout.contains("running: true"), "\(back.stdout)")
        usleep(200_000)
        program.signal(SIGTERM)
        let events = program.wait(timeout: 30).stdout.split(separator: "\n").map(String.init)
        let overrides = events.filter { $0.contains("route_change") && $0.contains("override") }
        #expect(overrides.count == 2, "route changes: \(events)")
        #expect(overrides.first?.contains("sonoraloop") == true && overrides.last?.contains("null") == true, "\(overrides)")
        #expect(appliance.stop().status == 0)
    }

    @Test("clients nodes by role: the intercom's stream goes through its own chain, the media's through the other, neither into both")
    func roleRouting() throws {
        let intercomRecording = folder + "/role-intercom.wav", mediaRecording = folder + "/role-media.wav"
        let socket = "/tmp/sonora-roles-\(getpid()).sock", control = "/tmp/sonora-rolesctl-\(getpid()).sock"
        let config = """
            engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
            device: {playback: "null"}
            control: {socket: \(control)}
            nodes:
              - {id: intercom, kind: clients, role: intercom}
              - {id: others, kind: clients}
              - {id: recI, kind: recorder, file: \(intercomRecording)}
              - {id: recM, kind: recorder, file: \(mediaRecording)}
              - {id: mix, kind: mixer, inputs: 2}
            connections:
              - {from: intercom, to: recI}
              - {from: others, to: recM}
              - {from: recI, to: mix}
              - {from: recM, to: "mix:1"}
              - {from: mix, to: output}
            session:
              socket: \(socket)
              roles:
                - {name: intercom, priority: 20}
                - {name: media, priority: 10}
              categories: {playback: media, playAndRecord: intercom}
            """
        let path = folder + "/roles.yaml"
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        let appliance = try CLIRunner(executable: sonoraBinary!).launch(["run", path])
        defer { if appliance.isRunning { appliance.signal(SIGKILL) } }
        var waits = 0
        while waits < 400, UnixSocket.connect(socket).map({ close($0); return true }) != true { usleep(25_000); waits += 1 }
        let media = folder + "/role-media-tone.wav", call = folder + "/role-call-tone.wav"
        _ = try runProcess("/usr/bin/sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", media, "synth", "1.5", "sine", "1000", "vol", "0.5"])
        _ = try runProcess("/usr/bin/sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", call, "synth", "1.5", "sine", "700", "vol", "0.25"])
        let environment = ProcessInfo.processInfo.environment.merging(["SONORA_SERVER": socket]) { $1 }
        let player = try CLIRunner(executable: sonoraBinary!).launch(["play", media, "--category", "playback"], environment: environment)
        let caller = try CLIRunner(executable: sonoraBinary!).launch(["play", call, "--category", "playback", "--role", "intercom"], environment: environment)
        #expect(player.wait(timeout: 60).status == 0 && caller.wait(timeout: 60).status == 0)
        appliance.signal(SIGTERM)
        #expect(appliance.wait(timeout: 60).status == 0)
        let intercomSide = try Self.samples(intercomRecording, folder: folder), mediaSide = try Self.samples(mediaRecording, folder: folder)
        let intercomPeak = intercomSide.map(abs).max() ?? 0, mediaPeak = mediaSide.map(abs).max() ?? 0
        // Each chain carries its own program only: 0.25 on the intercom's, 0.5 on the media's (a sum would reach 0.75).
        #expect(abs(intercomPeak - 0.25) < 0.02, "intercom chain peak \(intercomPeak)")
        #expect(abs(mediaPeak - 0.5) < 0.02, "media chain peak \(mediaPeak)")
    }

    @Test("32 programs play through the appliance at once: all attached together, all stopped cleanly, all reclaimed")
    func thirtyTwoClients() throws {
        // 1,024-frame periods: 32 debug-built clients each wake once a period on two cores.
        let appliance = try Appliance(folder: folder, name: "many", period: 1024)
        try #require(appliance.isServing)
        let file = folder + "/quiet.wav"
        _ = try runProcess("/usr/bin/sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", file, "synth", "1", "sine", "500", "vol", "0.01"])
        // Looping until SIGINT, so all 32 play together however long starting them takes.
        let clients = try (0..<32).map { _ in try play(appliance, file, extra: ["--loop"]) }
        var most = 0
        for _ in 0..<600 where most < 32 {
            most = max(most, try appliance.streams().count)
            usleep(50_000)
        }
        #expect(most == 32, "at most \(most) streams at once")
        let streams = try appliance.streams()
        #expect(Set(streams.compactMap { $0["pid"] as? Int }).count == streams.count, "one stream per program")
        for client in clients { client.signal(SIGINT) }
        for client in clients {
            let outcome = client.wait(timeout: 120)
            #expect(outcome.status == 0, "\(outcome.stderr)")
            // (Underruns are not judged: 32 debug builds on two loaded cores may fall behind.)
            #expect(outcome.stdout.contains("\"interrupted\" : true"), "\(outcome.stdout)")
        }
        var left = try appliance.streams().count
        for _ in 0..<200 where left > 0 {
            usleep(25_000)
            left = try appliance.streams().count
        }
        #expect(left == 0, "\(left) streams left after every program exited")
        #expect(appliance.stop().status == 0)
    }

    @Test("sonora play and record use the appliance when one runs (SONORA_SERVER), --direct bypasses it")
    func defaultThroughAppliance() throws {
        let appliance = try Appliance(folder: folder, name: "default")
        try #require(appliance.isServing)
        var environment = ProcessInfo.processInfo.environment
        environment["SONORA_SERVER"] = appliance.sessionSocket
        let sonora = CLIRunner(executable: sonoraBinary!)
        let file = try tone("short", seconds: 0.2)
        let through = try sonora.run(["play", "--json", file], environment: environment)
        #expect(through.status == 0 && through.stdout.contains("\"device\" : \"sonora\""), "\(through)")
        let direct = try sonora.run(["play", "--direct", "--json", file], environment: environment)
        #expect(direct.status == 0 && direct.stdout.contains("\"device\" : \"null\""), "\(direct)")
        let take = folder + "/default-take.wav"
        let recorded = try sonora.run(["record", "--seconds", "0.2", "--json", take], environment: environment)
        #expect(recorded.status == 0 && recorded.stdout.contains("\"device\" : \"sonora\""), "\(recorded)")
        let refused = try sonora.run(["play", "--direct", "--device", "sonora", file], environment: environment)
        #expect(refused.status != 0 && refused.stderr.contains("--direct"), "\(refused)")
        var gone = environment
        gone["SONORA_SERVER"] = folder + "/none.sock"
        let fallback = try sonora.run(["play", "--json", file], environment: gone)
        #expect(fallback.status == 0 && fallback.stdout.contains("\"device\" : \"null\""), "\(fallback)")
    }

    @Test("sonora session --help has an example; status without an appliance fails with the reason")
    func help() throws {
        for arguments in [["session", "--help"], ["session", "status", "--help"], ["session", "activate", "--help"]] {
            let help = try CLIRunner(executable: sonoraBinary!).run(arguments)
            #expect(help.status == 0 && help.stdout.contains("sonora session"), "\(arguments)")
        }
        let none = try CLIRunner(executable: sonoraBinary!).run(["session", "status", "--socket", folder + "/nothing.sock"])
        #expect(none.status != 0 && none.stderr.contains("nothing.sock"), "\(none.stderr)")
        // Hostile values: a negative duration reaches validation; a path too long for a socket is named.
        let negative = try CLIRunner(executable: sonoraBinary!).run(["session", "activate", "--category", "playback", "--seconds", "-1"])
        #expect(negative.status != 0 && negative.stderr.contains("--seconds -1"), "\(negative.stderr)")
        let long = try CLIRunner(executable: sonoraBinary!).run(["session", "status", "--socket", String(repeating: "x", count: 300)])
        #expect(long.status != 0 && long.stderr.contains("longer than 107 bytes"), "\(long.stderr)")
    }
}
