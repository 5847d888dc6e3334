import Foundation
import SonoraTestSupport
import Testing

/// `sonora play --rate`: the file's every frame plays, in 1 ÷ rate of the device's time
/// (the queue's timeline counts the device's frames), and bad rates are refused.
@Suite("sonora play --rate", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct PlayRateCLITests {
    struct Result: Decodable {
        var frames: Int
        var seconds: Double
        var deviceSeconds: Double
        var underruns: Int
    }

    @Test("rate 2 plays 9,600 frames in 4,800 device frames, rate 0.5 in 19,200, rate 1 in 9,600", arguments: [(2.0, 4800), (0.5, 19200), (1.0, 9600)])
    func deviceTimeFollowsTheRate(rate: Double, deviceFrames: Int) throws {
        let folder = try TemporaryFolder()
        let wav = folder.path("tone.wav")
        let made = try runProcess("/usr/bin/sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", wav, "synth", "0.2", "sine", "440", "gain", "-6"])
        #expect(made.status == 0, "\(made.stderr)")
        let outcome = try sonora("play", "--device", "null", "--rate", "\(rate)", "--json", wav)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let result = try JSONDecoder().decode(Result.self, from: Data(outcome.stdout.utf8))
        #expect(result.frames == 9600 && abs(result.seconds - 0.2) < 1e-9)
        #expect(result.underruns == 0)
        // Exact: stop after the queued buffers ends on ⌈frames ÷ rate⌉ device frames.
        #expect(abs(result.deviceSeconds * 48000 - Double(deviceFrames)) < 0.5, "\(result.deviceSeconds * 48000) device frames")
    }

    @Test("rates outside 0.5 … 2 are refused before anything opens, naming the value", arguments: ["0.25", "3", "nan", "-1"])
    func badRates(rate: String) throws {
        let outcome = try sonora("play", "--device", "null", "--rate", rate, "/nonexistent.wav")
        #expect(outcome.status != 0)
        #expect(outcome.stderr.contains("--rate"), "\(outcome.stderr)")
    }

    @Test("--help names --rate with an example")
    func help() throws {
        let outcome = try sonora("play", "--help")
        #expect(outcome.status == 0 && outcome.stdout.contains("--rate") && outcome.stdout.contains("sonora play --rate 1.5"))
    }
}
