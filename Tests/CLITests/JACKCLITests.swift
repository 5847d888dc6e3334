import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `jack:` devices from the command line, against a private jackd2 on the dummy backend.
@Suite("jack: devices in the CLI", .serialized, .enabled(if: JACKTestServer.isAvailable && CLIRunner.sonora != nil, "needs jackd2, root and the sonora binary"))
struct JACKCLITests {
    let scratch = try! TemporaryFolder(prefix: "sonora-jack-cli")

    func sonora(_ arguments: [String], server: JACKTestServer?) throws -> CLIOutcome {
        try CLIRunner(executable: CLIRunner.sonoraBinary!, timeout: 120).run(arguments, environment: server?.environment)
    }

    @Test("sonora devices --json lists the JACK server's clients and ports; none without a server")
    func devicesListsPorts() throws {
        let server = try JACKTestServer()
        let listed = try sonora(["devices", "--json"], server: server)
        #expect(listed.status == 0, "\(listed.stderr)")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
        let system = try #require(entries.first { $0["name"] as? String == "jack:system" }, "\(listed.stdout.prefix(600))")
        #expect(system["ports"] as? [String] == ["system:capture_1", "system:capture_2", "system:playback_1", "system:playback_2"])
        #expect(system["capture"] as? Bool == true && system["playback"] as? Bool == true && system["source"] as? String == "jack")
        #expect(entries.contains { $0["name"] as? String == "jack:self" })
        let one = try sonora(["devices", "--json", "jack:system"], server: server)
        #expect(one.status == 0 && one.stdout.contains("system:playback_2"), "\(one.stderr)")
        let missing = try sonora(["devices", "jack:nobody"], server: server)
        #expect(missing.status != 0 && missing.stderr.contains("no client 'nobody'"), "\(missing.stderr)")
        server.kill()
        let without = try sonora(["devices", "--json"], server: server)
        #expect(without.status == 0 && !without.stdout.contains("\"jack:system\""))
    }

    @Test("sonora latency --device jack:self measures JACK's one-period feedback round trip")
    func latencyThroughJACK() throws {
        let server = try JACKTestServer(period: 256)
        let outcome = try sonora(["latency", "--device", "jack:self", "--channels", "1", "--seconds", "1", "--json"], server: server)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any], "\(outcome.stdout)")
        #expect(result["measuredFrames"] as? Double == 256, "\(outcome.stdout)")
        #expect(result["theoreticalFrames"] as? Int == 256)
        #expect(result["periodFrames"] as? Int == 256)
    }

    @Test("a pipeline on jack: runs, its ports are connected, ctl changes a parameter and reads the meter")
    func pipelineOnJACK() throws {
        let server = try JACKTestServer(period: 256)
        let socket = "/tmp/sonora-jack-\(getpid()).sock"
        let config = """
            engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
            device: {playback: "jack:system"}
            nodes:
              - {id: tone, kind: ToneGenerator, parameters: {frequency: 440 Hz, level: -6 dB}}
              - {id: trim, kind: Gain, parameters: {gain: 0 dB}}
              - {id: meter, kind: Meter}
            connections:
              - {from: tone, to: trim}
              - {from: trim, to: meter}
              - {from: meter, to: output}
            control: {socket: \(socket)}
            status: {interval: 0}
            """
        let path = scratch.path + "/jack.yaml"
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try CLIRunner(executable: CLIRunner.sonoraBinary!).launch(["run", path], environment: server.environment)
        defer {
            if run.isRunning { _ = run.signal(SIGTERM) }
            _ = run.wait(timeout: 30)
        }
        func ctl(_ words: [String]) throws -> CLIOutcome { try sonora(["ctl", "--socket", socket, "--json"] + words, server: nil) }
        var status = try ctl(["status"])
        for _ in 0..<200 where status.status != 0 && run.isRunning {
            usleep(50_000)
            status = try ctl(["status"])
        }
        try #require(status.status == 0, "the daemon did not answer: \(status.stderr) \(run.isRunning ? "" : run.wait(timeout: 5).stderr)")
        // libjack is opened on first use (CJackLoader), and was here.
        #expect(LibraryLoadingCLITests.mappedLibraries(of: run.processIdentifier).contains { $0.hasPrefix("libjack.so") })
        let connections = server.tool("jack_lsp", ["-c"])
        #expect(connections.contains("sonora:out_1\n   system:playback_1"), "\(connections)")
        #expect(connections.contains("sonora:out_2\n   system:playback_2"), "\(connections)")
        func level() throws -> Double? {
            usleep(1_000_000)
            let meters = try ctl(["meters"])
            let answer = try JSONSerialization.jsonObject(with: Data(meters.stdout.utf8)) as? [String: Any]
            let list = answer?["meters"] as? [[String: Any]]
            let readings = (list ?? []).filter { $0["node"] as? String == "meter" && $0["element"] as? Int == 0 }
            // The average (RMS) follows a change within the wait; a peak meter holds and decays.
            let reading = readings.first { !($0["meter"] as? String ?? "").lowercased().contains("peak") } ?? readings.first
            return reading?["value"] as? Double
        }
        let meters = try ctl(["meters"]).stdout
        let loud = try #require(try level(), "no meter reading: \(meters)")
        #expect(try ctl(["set", "trim", "gain", "-20dB"]).status == 0)
        // The average settles over a second or so: poll until it has (at most ~10 s).
        var quiet = try #require(try level())
        for _ in 0..<10 where quiet >= loud - 15 { quiet = try #require(try level()) }
        #expect(loud > -12 && loud < -4, "\(loud): \(meters)")
        #expect(quiet < loud - 15, "\(quiet) after -20 dB, \(loud) before: \(meters)")
    }

    @Test("a pipeline on jack: keeps playing when the server's buffer size changes under it")
    func pipelineFollowsABufferSizeChange() throws {
        let server = try JACKTestServer(period: 256)
        let socket = "/tmp/sonora-jack-bufsize-\(getpid()).sock"
        let path = scratch.path + "/bufsize.yaml"
        try """
            engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
            device: {playback: "jack:system"}
            nodes:
              - {id: tone, kind: ToneGenerator, parameters: {frequency: 440 Hz, level: -6 dB}}
              - {id: meter, kind: Meter}
            connections:
              - {from: tone, to: meter}
              - {from: meter, to: output}
            control: {socket: \(socket)}
            status: {interval: 0}
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try CLIRunner(executable: CLIRunner.sonoraBinary!).launch(["run", path], environment: server.environment)
        defer {
            if run.isRunning { _ = run.signal(SIGTERM) }
            _ = run.wait(timeout: 30)
        }
        func ctl(_ words: [String]) throws -> [String: Any]? {
            let outcome = try sonora(["ctl", "--socket", socket, "--json"] + words, server: nil)
            guard outcome.status == 0 else { return nil }
            return try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any]
        }
        func cycles() throws -> Int? { (try ctl(["status"])?["status"] as? [String: Any])?["cycles"] as? Int }
        func level() throws -> Double? {
            let list = try ctl(["meters"])?["meters"] as? [[String: Any]] ?? []
            let readings = list.filter { $0["node"] as? String == "meter" && $0["element"] as? Int == 0 }
            let reading = readings.first { !($0["meter"] as? String ?? "").lowercased().contains("peak") } ?? readings.first
            return reading?["value"] as? Double
        }
        var started = try cycles()
        for _ in 0..<200 where started == nil && run.isRunning {
            usleep(50_000)
            started = try cycles()
        }
        try #require(started != nil, "the daemon did not answer: \(run.isRunning ? "" : run.wait(timeout: 5).stderr)")
        usleep(1_000_000)
        let before = try #require(try level())
        _ = server.tool("jack_bufsize", ["512"])
        #expect(server.tool("jack_bufsize", []).contains("512"), "the server did not take the new size")
        usleep(1_500_000)
        let first = try #require(try cycles(), "no answer after the change: \(run.isRunning ? "" : run.wait(timeout: 5).stderr)")
        usleep(1_000_000)
        let second = try #require(try cycles())
        // 48000 / 512 ≈ 94 cycles a second: the device runs at the new size.
        #expect(second - first > 40, "cycles \(first) → \(second) in a second after the change")
        let after = try #require(try level())
        #expect(abs(after - before) < 1.5, "the meter read \(before) dB before the change and \(after) dB after")
        #expect(run.isRunning)
    }

    @Test("device: jack:… is checked where it stands: bad names and a missing server/client")
    func pipelineCheckNamesTheLine() throws {
        let server = try JACKTestServer()
        for (device, expected) in [("jack:a:b", "without ':'"), ("jack:nobody", "no client 'nobody'"), ("jack:@sonora-absent-server", "no JACK server 'sonora-absent-server'")] {
            let path = scratch.path + "/check.yaml"
            try """
                engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
                device: {playback: "\(device)"}
                nodes:
                  - {id: tone, kind: ToneGenerator}
                connections:
                  - {from: tone, to: output}
                """.write(toFile: path, atomically: true, encoding: .utf8)
            let outcome = try sonora(["check", path], server: server)
            #expect(outcome.status != 0 && outcome.stderr.contains("\(path):2:") && outcome.stderr.contains(expected), "\(device): \(outcome.stderr)")
        }
    }
}
