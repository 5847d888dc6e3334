import Foundation
import SonoraTestSupport
import Testing

@Suite("sonora play", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct PlayCLITests {
    struct Result: Decodable {
        struct File: Decodable {
            var file: String
            var format: String
            var frames: Int
        }
        var device: String
        var files: [File]
        var underruns: Int
    }

    @Test("--help shows an example")
    func help() throws {
        let outcome = try sonora("play", "--help")
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("sonora play take1.wav"))
    }

    @Test("plays a sox WAV and an ffmpeg AAC file on the null device: every frame, as JSON")
    func playsOnNullDevice() throws {
        let folder = try TemporaryFolder()
        let wav = folder.path("tone.wav")
        let m4a = folder.path("tone.m4a")
        _ = try runProcess("/usr/bin/sox", ["-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", "0.25", "sine", "440"])
        _ = try runProcess("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=0.25", "-c:a", "aac", m4a])
        let outcome = try sonora("play", "--device", "null", "--volume", "-6", "--json", wav, m4a)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let result = try JSONDecoder().decode(Result.self, from: Data(outcome.stdout.utf8))
        let reports = result.files
        #expect(reports.count == 2 && result.device == "null")
        #expect(reports.first?.frames == 11025)  // 0.25 s at 44.1 kHz, exactly once
        #expect(reports.first?.format == "LEI16@44100x2")
        // AAC plays its valid frames: the priming and the last packet's padding are trimmed.
        #expect(reports.last?.frames == 11025)
    }

    @Test("a missing file, a device that does not open, a bad volume: non-zero with the reason")
    func failures() throws {
        let missing = try sonora("play", "/nonexistent/sonora-play.wav")
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("/nonexistent/sonora-play.wav") && missing.stderr.contains("not found"))
        let folder = try TemporaryFolder()
        let wav = folder.path("tone.wav")
        _ = try runProcess("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", wav, "synth", "0.05", "sine", "440"])
        let device = try sonora("play", "--device", "hw:CARD=SonoraNoSuchCard", wav)
        #expect(device.status != 0)
        #expect(device.stderr.contains("invalid queue device") && device.stderr.contains("SonoraNoSuchCard"))
        let volume = try sonora("play", "--volume", "6", wav)
        #expect(volume.status != 0)
        #expect(volume.stderr.contains("--volume"))
    }
}
