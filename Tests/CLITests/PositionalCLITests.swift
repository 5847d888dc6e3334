import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The positional example (`Configs/positional.yaml`) rendered by `sonora render`, and a
/// mixer3d source moved over the control socket of a running `sonora run`: placement is
/// judged on the output — louder on the side a source is on, quieter when it is far.
@Suite("mixer3d: the positional example and moving sources over the control socket", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct PositionalCLITests {
    let scratch = try! TemporaryFolder(prefix: "sonora-positional")
    var folder: String { scratch.path }

    /// Channel `channel` (1-based) of a file, as floats.
    func samples(_ path: String, channel: Int) throws -> [Float] {
        let raw = folder + "/\(UUID().uuidString).f32"
        _ = try runProcess("/usr/bin/sox", [path, "-t", "f32", "-c", "1", raw, "remix", "\(channel)"])
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// dB of a tone's amplitude on one channel.
    func level(_ samples: [Float], _ frequency: Double) -> Double {
        SignalMeasurement.amplitudeDecibels(SignalMeasurement.amplitude(of: samples, frequency: frequency, sampleRate: 48000))
    }

    @Test("Configs/positional.yaml renders: right on the right, left on the left, the far one quieter and centred")
    func example() throws {
        let config = PackageRoot.path("Configs/positional.yaml")
        let output = folder + "/scene.wav"
        let outcome = try sonora("render", config, "--output", output, "--seconds", "3", "--json")
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let left = try samples(output, channel: 1), right = try samples(output, channel: 2)
        try #require(left.count == 144_000 && right.count == 144_000)
        // The tones of the example: 339 Hz at [3, 0, -1], 453 Hz at [-3, 0, -1], 571 Hz at [0, 0, -30].
        let low = (left: level(left, 339), right: level(right, 339))
        let high = (left: level(left, 453), right: level(right, 453))
        let far = (left: level(left, 571), right: level(right, 571))
        #expect(low.right - low.left > 6, "the source at +x: \(low)")
        #expect(high.left - high.right > 6, "the source at -x: \(high)")
        #expect(abs(far.left - far.right) < 1, "the source straight ahead: \(far)")
        // All three at -18 dB; 30 m away against √10 m with the inverse curve: 19.5 dB quieter.
        let near = 10 * log10(pow(10, low.left / 10) + pow(10, low.right / 10))
        let distant = 10 * log10(pow(10, far.left / 10) + pow(10, far.right / 10))
        #expect(near - distant > 15 && near - distant < 24, "near \(near) dB, far \(distant) dB")
    }

    /// A `sonora run` on the null device with a control socket; stopped by `stop()`.
    final class Daemon {
        let process: RunningCommand
        let socket: String

        init(folder: String, socket: String) throws {
            self.socket = socket
            let config = """
                engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
                device: {playback: "null"}
                nodes:
                  - {id: tone, kind: tone, parameters: {frequency: 500 Hz, level: -12 dB}}
                  - id: scene
                    kind: mixer3d
                    sources:
                      - {name: bell, position: [-2, 0, 0]}
                  - {id: meter, kind: Meter}
                connections:
                  - {from: tone, to: "scene:0"}
                  - {from: scene, to: meter}
                  - {from: meter, to: output}
                control: {socket: \(socket)}
                status: {interval: 0}
                """
            let path = folder + "/live.yaml"
            try config.write(toFile: path, atomically: true, encoding: .utf8)
            process = try CLIRunner.sonora!.launch(["run", path])
            // `while`: a `for … where` would send the status request on all 400 iterations.
            var waits = 0
            while waits < 400, process.isRunning, json(controlExchange(socket, "{\"cmd\":\"status\"}\n", timeout: 2))["ok"] as? Bool != true {
                usleep(25_000)
                waits += 1
            }
        }

        func ctl(_ arguments: String...) throws -> Outcome { try runProcess(sonoraBinary!, ["ctl", "--socket", socket] + arguments) }

        /// The meter's average power of the left and right channel, dB.
        func levels() -> (left: Double, right: Double)? {
            let meters = json(controlExchange(socket, "{\"cmd\":\"meters\"}\n"))["meters"] as? [[String: Any]] ?? []
            func value(_ name: String) -> Double? { meters.first { $0["node"] as? String == "meter" && $0["meter"] as? String == name }?["value"] as? Double }
            guard let left = value("Average Power 0"), let right = value("Average Power 1") else { return nil }
            return (left, right)
        }

        /// Waits (bounded) until the meters show what `condition` wants; the last levels seen.
        func waitForLevels(_ condition: ((left: Double, right: Double)) -> Bool) -> (left: Double, right: Double)? {
            var last: (left: Double, right: Double)?
            for _ in 0..<200 {
                last = levels()
                if let last, condition(last) { return last }
                usleep(50_000)
            }
            return last
        }

        func stop() -> CLIOutcome {
            if process.isRunning { process.signal(SIGTERM) }
            return process.wait(timeout: 60)
        }
    }

    func run(_ arguments: [String]) throws -> Outcome { try runProcess(sonoraBinary!, arguments) }

    @Test("ctl set NODE.SOURCE position moves a source of a running pipeline: the output follows; bad values are refused, it keeps running")
    func moveWhileRunning() throws {
        let socket = "/tmp/sonora-positional-\(getpid()).sock"
        let daemon = try Daemon(folder: folder, socket: socket)
        try #require(daemon.process.isRunning && FileManager.default.fileExists(atPath: socket), "the daemon did not start")

        // At [-2, 0, 0]: louder on the left.
        let start = daemon.waitForLevels { $0.left - $0.right > 6 }
        #expect(start.map { $0.left - $0.right > 6 } == true, "at -x: \(String(describing: start))")

        let moved = try daemon.ctl("set", "scene.bell", "position", "2,0,0")
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(moved.stdout.contains("position [input 0] = 2,0,0 m"), "\(moved.stdout)")
        let right = daemon.waitForLevels { $0.right - $0.left > 6 }
        #expect(right.map { $0.right - $0.left > 6 } == true, "moved to +x: \(String(describing: right))")

        // Read back by name and by index, in words and in JSON.
        let read = try daemon.ctl("get", "scene.source0", "position")
        #expect(read.status == 0 && read.stdout.contains("= 2,0,0 m"), "\(read.stdout)\(read.stderr)")
        let answer = json(controlExchange(socket, #"{"cmd":"get","node":"scene.bell","param":"position"}"# + "\n"))
        #expect(answer["values"] as? [Double] == [2, 0, 0] && answer["value"] as? Double == 2 && answer["unit"] as? String == "m", "\(answer)")

        // Near, then far ahead: both channels fall (inverse curve, reference 1 m: 20 m is 26 dB down).
        _ = try daemon.ctl("set", "scene.bell", "position", "0,0,-1")
        let near = daemon.waitForLevels { abs($0.left - $0.right) < 1 }
        _ = try daemon.ctl("set", "scene.bell", "position", "0,0,-20")
        let far = daemon.waitForLevels { near != nil && $0.left < near!.left - 20 }
        if let near, let far {
            #expect(near.left - far.left > 20 && near.right - far.right > 20, "near \(near), far \(far)")
        } else {
            Issue.record("no meters: near \(String(describing: near)), far \(String(describing: far))")
        }

        // The source's other parameters are the unit's input parameters of its element.
        let gain = try daemon.ctl("set", "scene.bell", "gain", "-6dB")
        #expect(gain.status == 0, "\(gain.stderr)")
        let unitGain = json(controlExchange(socket, #"{"cmd":"get","node":"scene","param":"gain","scope":"input","element":0}"# + "\n"))
        #expect(unitGain["value"] as? Double == -6, "\(unitGain)")

        // Bad values: refused with the reason, the position unchanged.
        let refusals: [([String], String)] = [
            (["set", "scene.bell", "position", "1,0"], "has 2 numbers; a position is x,y,z in metres"),
            (["set", "scene.bell", "position", "left"], "'left' has 1 number"),
            (["set", "scene.bell", "position", "1,nan,0"], "is not a finite number"),
            (["set", "scene.bell", "position", "20000,0,0"], "out of range: 20000 m away"),
            (["set", "scene.bel", "position", "1,0,0"], "scene has no source 'bel'; did you mean 'bell'? (sources: bell (source0))"),
            (["set", "scene.source1", "position", "1,0,0"], "scene has no source 'source1'"),
            (["set", "scene.bell", "positon", "1,0,0"], "scene has no parameter 'positon'"),
            (["set", "scene.bell", "position", "1,0,0", "--scope", "output"], "its parameters are in the input scope"),
        ]
        for (arguments, message) in refusals {
            let outcome = try run(["ctl", "--socket", socket] + arguments)
            #expect(outcome.status == 1 && outcome.stderr.contains(message), "\(arguments): \(outcome.stderr)")
        }
        let after = json(controlExchange(socket, #"{"cmd":"get","node":"scene.bell","param":"position"}"# + "\n"))
        #expect(after["values"] as? [Double] == [0, 0, -20], "\(after)")
        // An out-of-range code scripts can tell from a malformed one.
        let range = json(controlExchange(socket, #"{"cmd":"set","node":"scene.bell","param":"position","value":"0,0,-20000"}"# + "\n"))
        #expect(range["code"] as? String == "out-of-range" && range["field"] as? String == "value", "\(range)")
        let malformed = json(controlExchange(socket, #"{"cmd":"set","node":"scene.bell","param":"position","value":5}"# + "\n"))
        #expect(malformed["code"] as? String == "bad-field" && malformed["field"] as? String == "value", "\(malformed)")

        // Still running, still rendering.
        let status = json(controlExchange(socket, "{\"cmd\":\"status\"}\n"))["status"] as? [String: Any]
        #expect(status?["running"] as? Bool == true, "\(String(describing: status))")
        #expect(daemon.process.isRunning)
        let ended = daemon.stop()
        #expect(ended.status == 0, "\(ended.stderr)")
    }
}
