import Foundation
import SonoraTestSupport
import Testing

/// `sonora-bench io`'s JACK2 lateness anchor: a client on the dummy backend records its
/// process callback's wake-ups, judged by the same straight-line fit as Sonora's I/O thread.
@Suite("sonora-bench jack-wakes (the io benchmark's JACK lateness anchor)")
struct JackWakesCLITests {
    struct Report: Decodable {
        var cycles: Int
        var xruns: Int
        var latenessNanoseconds: [Double]
    }

    @Test("a JACK client's wake-ups on the dummy backend: one per cycle, lateness from the fitted line, never negative")
    func recordsEveryCycle() throws {
        let script = packageRoot.appendingPathComponent("scripts/with-jack-dummy.sh").path
        let bench = try #require(sonoraBenchBinary, "sonora-bench is built beside sonora")
        let outcome = try runProcess(script, ["48000", "256", bench, "jack-wakes", "--seconds", "1.5", "--period", "256"])
        if outcome.status == 77 {
            print("skipped: JACK dummy backend unavailable here: \(outcome.stderr.split(separator: "\n").first ?? "")")
            return
        }
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: Data(outcome.stdout.utf8))
        // 1.5 s at 256 frames is about 280 cycles; the server had to run its client at all.
        #expect(report.cycles > 50, "\(report.cycles) wake-ups")
        // Every wake-up of a run without xruns is in the fit (segments shorter than 8 are left out).
        if report.xruns == 0 { #expect(report.latenessNanoseconds.count >= report.cycles - 8) }
        #expect(report.latenessNanoseconds.allSatisfy { $0 >= 0 })
        #expect(report.latenessNanoseconds.contains(0), "measured from the earliest wake-up")
    }

    @Test("bad options are refused with the reason")
    func refusesBadOptions() throws {
        let bench = try #require(sonoraBenchBinary, "sonora-bench is built beside sonora")
        let outcome = try runProcess(bench, ["jack-wakes", "--period", "3"])
        #expect(outcome.status != 0)
        #expect(outcome.stderr.contains("--period"))
        // A negative duration reaches validation (not read as an option name).
        let negative = try runProcess(bench, ["jack-wakes", "--seconds", "-1"])
        #expect(negative.status != 0 && negative.stderr.contains("--seconds must be in"))
    }
}
