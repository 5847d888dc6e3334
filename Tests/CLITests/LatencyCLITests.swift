import Foundation
import SonoraTestSupport
import Testing

/// The package root (where scripts/ lives).
let packageRoot = PackageRoot.url

@Suite("sonora latency and devices", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct LatencyCLITests {
    struct Result: Decodable {
        var measuredFrames: Double?
        var theoreticalFrames: Int
        var reportedFrames: Int?
        var noSignal: Bool
        var xruns: Int
    }

    @Test("on Sonora's loopback plugin the measured round trip is periods × period", arguments: [(128, 2), (256, 3)])
    func loopbackPlugin(period: Int, periods: Int) throws {
        let outcome = try sonora("latency", "--device", "sonoraloop", "--period", "\(period)", "--periods", "\(periods)", "--seconds", "0.8", "--json")
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let result = try JSONDecoder().decode(Result.self, from: Data(outcome.stdout.utf8))
        #expect(result.theoreticalFrames == period * periods)
        if result.xruns == 0 { #expect(result.measuredFrames == Double(period * periods)) }
        #expect(result.reportedFrames != nil)
    }

    @Test("through JACK2's dummy backend the round trip is periods × period too", arguments: [(256, 2), (512, 3)])
    func jackDummy(period: Int, periods: Int) throws {
        let script = packageRoot.appendingPathComponent("scripts/with-jack-dummy.sh").path
        let outcome = try runProcess(script, ["48000", "256", sonoraBinary!, "latency", "--device", "jackloop", "--period", "\(period)", "--periods", "\(periods)", "--seconds", "2", "--json"])
        if outcome.status == 77 {
            print("skipped: JACK dummy backend unavailable here: \(outcome.stderr.split(separator: "\n").first ?? "")")
            return
        }
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let result = try JSONDecoder().decode(Result.self, from: Data(outcome.stdout.utf8))
        if result.xruns == 0 { #expect(result.measuredFrames == Double(period * periods)) }
    }

    @Test("no signal is an error naming why; a bad device is an error naming it")
    func failures() throws {
        let silent = try sonora("latency", "--device", "null", "--seconds", "0.6")
        #expect(silent.status != 0)
        #expect(silent.stderr.contains("no signal"))
        let missing = try sonora("latency", "--device", "sonora_no_such_pcm")
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("sonora_no_such_pcm"))
        let neither = try sonora("latency")
        #expect(neither.status != 0)
    }

    @Test("devices lists Sonora's own devices, as JSON too, and probes the loopback plugin")
    func devices() throws {
        let outcome = try sonora("devices", "--json")
        #expect(outcome.status == 0)
        let entries = try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(entries.contains { $0["name"] as? String == "null" })
        let probed = try sonora("devices", "--probe", "--json", "sonoraloop")
        #expect(probed.status == 0)
        #expect(probed.stdout.contains("FLOAT_LE") && probed.stdout.contains("mmap-noninterleaved"))
        let missing = try sonora("devices", "--probe", "sonora_no_such_pcm")
        #expect(missing.status != 0 && missing.stderr.contains("sonora_no_such_pcm"))
    }
}
