import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `sonora record`'s live level line, its JSON result, and a compressed recording ended by SIGINT.
@Suite("sonora record: level line, JSON, SIGINT", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct RecordProgressCLITests {
    typealias Report = RecordCLITests.Report

    @Test("--progress refreshes time and peak on stderr; without it (a pipe) stderr stays quiet; --json gives file, frames, seconds, format, peak")
    func levelLineAndJSON() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("level.wav")
        let shown = try sonora("record", path, "--seconds", "1", "--device", "null", "--progress", "--json")
        #expect(shown.status == 0, "\(shown.stderr)")
        let refreshes = shown.stderr.split(separator: "\r").filter { $0.contains("peak") && $0.contains("dBFS") }
        #expect(refreshes.count >= 2, "\(shown.stderr.debugDescription)")
        // The null device captures silence: the floor.
        #expect(refreshes.allSatisfy { $0.contains("-120.0 dBFS") }, "\(shown.stderr.debugDescription)")
        let report = try JSONDecoder().decode(Report.self, from: Data(shown.stdout.utf8))
        #expect(report.file == path && report.frames == 48000 && report.seconds == 1 && report.format == "LEI16@48000" && report.peak == -120)

        let quiet = try sonora("record", folder.path("quiet.wav"), "--seconds", "0.3", "--device", "null", "--json")
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr.debugDescription)")
    }

    @Test("SIGINT ends an ALAC recording with a complete file: its frames are the report's, trimmed by the packet table")
    func interruptedALACIsComplete() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("open-ended.caf")
        let run = try RecordingSurvivalCLITests.Running(["record", path, "-d", "alac@44100", "--device", "null", "--json"])
        let partial = folder.path(".open-ended.caf.partial-\(run.process.processIdentifier)")
        for _ in 0..<400 where !FileManager.default.fileExists(atPath: partial) { usleep(10_000) }
        usleep(600_000)
        run.signal(SIGINT)
        #expect(run.finish() == 0, "\(run.errorText)")
        let report = try JSONDecoder().decode(Report.self, from: Data(run.outputText.utf8))
        #expect(report.frames > 0)
        let info = try sonora("info", "--json", path)
        #expect(json(info.stdout)["frames"] as? Int == report.frames, "\(info.stdout)")
        #expect(!FileManager.default.fileExists(atPath: partial))
    }
}
