import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `sonora ctl transport` and `sonora ctl patch` against a running `sonora run` (null device,
/// eg-metro and eg-params from lv2-examples): changes land on the I/O thread and come back in
/// the answer; bad words exit non-zero with the reason on stderr.
@Suite("sonora ctl transport and patch", .serialized, .enabled(if: controlTestBinary != nil, "the sonora binary is not built"))
struct TransportCLITests {
    let scratch = try! TemporaryFolder(prefix: "sonora-transport-cli")

    @Test func transportAndPatchOverTheSocket() throws {
        let socket = "/tmp/sonora-ctl-\(getpid())-transport.sock"
        let config = scratch.path("transport.yaml")
        try """
            engine: {sample_rate: 48000, period: 256, periods: 2, channels: 1}
            device: {playback: "null"}
            transport: {tempo: 90, meter: 3/4, playing: true}
            nodes:
              - {id: metro, kind: lv2, uri: "http://lv2plug.in/plugins/eg-metro"}
              - {id: params, kind: lv2, uri: "http://lv2plug.in/plugins/eg-params"}
              - {id: mix, kind: mixer, inputs: 2}
            connections:
              - {from: metro, to: "mix:0"}
              - {from: params, to: "mix:1"}
              - {from: mix, to: output}
            control: {socket: \(socket)}
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try CLIRunner(executable: controlTestBinary!).launch(["run", config])
        defer {
            if daemon.isRunning { _ = daemon.signal(SIGTERM) }
            _ = daemon.wait(timeout: 60)
        }
        var waited = 0
        while daemon.isRunning && waited < 400 && json(controlExchange(socket, "{\"cmd\":\"status\"}\n", timeout: 2))["ok"] as? Bool != true {
            usleep(25_000)
            waited += 1
        }
        func ctl(_ words: String...) throws -> CLIOutcome { try runProcess(controlTestBinary!, ["ctl", "--socket", socket] + words) }

        let status = json(try ctl("transport", "--json").stdout)
        #expect(status["playing"] as? Bool == true && status["tempo"] as? Double == 90 && status["meter"] as? String == "3/4")
        let tempo = json(try ctl("transport", "tempo", "96", "--json").stdout)
        #expect(tempo["tempo"] as? Double == 96, "the answer comes once the I/O thread has the change: \(tempo)")
        let stopped = json(try ctl("transport", "stop", "--json").stdout)
        #expect(stopped["playing"] as? Bool == false)
        let located = try ctl("transport", "locate", "8")
        #expect(located.status == 0 && located.stdout.contains("stopped at bar 3 beat 3.000 (beat 8.000)"), "\(located.stdout)")
        let refused = try ctl("transport", "tempo", "0")
        #expect(refused.status != 0 && refused.stderr.contains("tempo must be 1…999 BPM"), "\(refused.stderr)")
        let typo = try ctl("transport", "paly")
        #expect(typo.status != 0 && typo.stderr.contains("did you mean 'play'?"), "\(typo.stderr)")

        let set = json(try ctl("patch", "params", "float", "0.75", "--json").stdout)
        let property = (set["properties"] as? [[String: Any]])?.first
        #expect(property?["value"] as? Double == 0.75 && property?["uri"] as? String == "http://lv2plug.in/plugins/eg-params#float", "\(set)")
        let urid = try #require(property?["urid"] as? Int)
        let byURID = try ctl("patch", "params", "\(urid)")
        #expect(byURID.stdout.hasPrefix("float = 0.75"), "\(byURID.stdout)")
        let noPatch = try ctl("patch", "metro")
        #expect(noPatch.status != 0 && noPatch.stderr.contains("has no patch properties"))
        let help = try runProcess(controlTestBinary!, ["ctl", "--help"])
        #expect(help.stdout.contains("sonora ctl transport tempo 96") && help.stdout.contains("patch NODE"))
    }
}
