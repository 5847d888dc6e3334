import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("sonora record", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct RecordCLITests {
    /// `sonora record --json`'s result.
    struct Report: Decodable {
        var file: String
        var format: String
        var device: String
        var frames: Int
        var seconds: Double
        var overruns: Int
        var peak: Double
    }

    @Test("--help shows an example")
    func help() throws {
        let outcome = try sonora("record", "--help")
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("sonora record take1.wav --seconds 5"))
    }

    @Test("records PCM WAV, IMA4 CAF and ALAC CAF from the null device: the frames asked for, files others read")
    func recordsOnNullDevice() throws {
        let folder = try TemporaryFolder()
        let wav = folder.path("take.wav")
        let pcm = try sonora("record", wav, "--seconds", "0.25", "-d", "LEI16@44100x2", "--device", "null", "--json")
        #expect(pcm.status == 0, "\(pcm.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: Data(pcm.stdout.utf8))
        #expect(report.frames == 11025 && report.format == "LEI16@44100x2" && report.overruns == 0)
        let soxi = try runProcess("/usr/bin/soxi", ["-s", wav])
        #expect(soxi.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "11025")

        let ima4 = folder.path("memo.caf")
        let compressed = try sonora("record", ima4, "-f", "caff", "-d", "ima4@16000", "--seconds", "0.5", "--json")
        #expect(compressed.status == 0, "\(compressed.stderr)")
        #expect(try JSONDecoder().decode(Report.self, from: Data(compressed.stdout.utf8)).frames == 8000)
        let info = try sonora("info", ima4)
        #expect(info.stdout.contains("ima4@16000") && info.stdout.contains("8000"), "\(info.stdout)")

        let alac = folder.path("lossless.caf")
        let lossless = try sonora("record", alac, "-d", "alac@44100x2", "--seconds", "0.2", "--json")
        #expect(lossless.status == 0, "\(lossless.stderr)")
        // ALAC packets are whole (4096 frames): 8820 frames asked, 3 packets written, and the
        // packet table's remainder (3468 frames) trims the file to what was asked.
        #expect(try JSONDecoder().decode(Report.self, from: Data(lossless.stdout.utf8)).frames == 8820)
        let alacInfo = try sonora("info", "--json", alac)
        let described = json(alacInfo.stdout)
        #expect(described["frames"] as? Int == 8820, "\(alacInfo.stdout)")
        #expect(alacInfo.stdout.contains("alac@44100x2"), "\(alacInfo.stdout)")
    }

    @Test("SIGINT ends the recording with a complete file")
    func interruptedRecordingIsComplete() throws {
        let folder = try TemporaryFolder()
        let wav = folder.path("open-ended.wav")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: sonoraBinary!)
        process.arguments = ["record", wav, "--json"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = Pipe()
        try process.run()
        // Until the file exists (the recording has begun); bounded, nothing asserted about time.
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: wav) && !FileManager.default.fileExists(atPath: folder.path(".open-ended.wav.partial")) { usleep(10_000) }
        usleep(200_000)
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        let report = try JSONDecoder().decode(Report.self, from: out.fileHandleForReading.readDataToEndOfFile())
        #expect(report.frames > 0)
        let soxi = try runProcess("/usr/bin/soxi", ["-s", wav])
        #expect(soxi.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(report.frames)")
    }

    @Test("an existing file, an unknown format, a device that does not open: non-zero with the reason, nothing written")
    func failures() throws {
        let folder = try TemporaryFolder()
        let existing = folder.path("existing.wav")
        FileManager.default.createFile(atPath: existing, contents: Data([1, 2, 3]))
        let kept = try sonora("record", existing, "--seconds", "0.1")
        #expect(kept.status != 0 && kept.stderr.contains("exists; use --overwrite"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: existing)) == Data([1, 2, 3]))
        let aac = try sonora("record", folder.path("x.caf"), "-d", "aac@44100", "--seconds", "0.1")
        #expect(aac.status != 0 && aac.stderr.contains("record takes linear PCM, ima4 or alac"))
        let missing = folder.path("y.wav")
        let device = try sonora("record", missing, "--device", "hw:CARD=SonoraNoSuchCard", "--seconds", "0.1")
        #expect(device.status != 0)
        #expect(device.stderr.contains("invalid queue device") && device.stderr.contains("SonoraNoSuchCard"))
        #expect(!FileManager.default.fileExists(atPath: missing))
    }
}
