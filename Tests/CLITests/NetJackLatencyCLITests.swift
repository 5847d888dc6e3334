import Foundation
import SonoraTestSupport
import Testing

/// `sonora latency --device netjack:…` measures the round trip through a netjack2 master:
/// the slave in its own network namespace, jackd's netmanager in the master's looping the
/// slave's channels back (scripts/netjack-netns.sh). netjack2 adds `latency` whole periods
/// and the master's turn-round one more.
@Suite("sonora latency on a netjack2 slave", .serialized)
struct NetJackLatencyCLITests {
    struct Result: Decodable {
        var measuredFrames: Double?
        var periodFrames: Int
        var xruns: Int
        var bursts: [Double?]  // each burst's estimate can carry a fraction (512.001)
    }

    @Test("the round trip through jackd's netmanager is (latency + 1) periods, latency 1 and 2")
    func roundTripThroughTheMaster() throws {
        let script = packageRoot.appendingPathComponent("scripts/netjack-netns.sh").path
        let prefix = "nl\(getpid() % 100_000)"
        let subnet = Int(getpid() % 200) + 20
        let up = try runProcess(script, ["up", prefix, "1", "\(subnet)"])
        if up.status == 77 {
            print("skipped: network namespaces cannot be made here: \(up.stderr.split(separator: "\n").first ?? "")")
            return
        }
        #expect(up.status == 0, "\(up.stderr)")
        defer { _ = try? runProcess(script, ["down", prefix]) }
        for latency in [1, 2] {
            // A master of its own for each run: a netjack2 slave leaves without a word, so the
            // master keeps the closed slave until its timeout, and a slave joining meanwhile
            // finds the master's cycles stalled on the one that left.
            let master = Process()
            master.executableURL = URL(fileURLWithPath: script)
            master.arguments = ["master", prefix, "48000", "256"]
            master.standardOutput = FileHandle.nullDevice
            master.standardError = FileHandle.nullDevice
            try master.run()
            defer {
                // Bounded: a wedged jackd ignores SIGTERM; `down` (deferred above) kills the rest.
                master.stop(grace: 5)
            }
            let outcome = try runProcess(
                "/usr/sbin/ip",
                ["netns", "exec", "\(prefix)-s1", sonoraBinary!, "latency", "--device", "netjack:slave@10.77.\(subnet).1,latency=\(latency)",
                 "--seconds", "3", "--json"])
            #expect(outcome.status == 0, "latency \(latency): \(outcome.stderr)")
            guard outcome.status == 0 else { continue }
            guard let result = try? JSONDecoder().decode(Result.self, from: Data(outcome.stdout.utf8)) else {
                Issue.record("latency \(latency): not the JSON result on stdout: \(outcome.stdout.debugDescription); stderr: \(outcome.stderr)")
                continue
            }
            #expect(result.periodFrames == 256, "the master's period")
            if result.xruns == 0 {
                #expect(result.measuredFrames == Double((latency + 1) * 256), "latency \(latency): bursts \(result.bursts)")
            }
        }
    }
}
