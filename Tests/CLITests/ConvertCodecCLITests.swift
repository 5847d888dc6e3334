import Foundation
import SonoraTestSupport
import Testing

private let soxTool = ["/usr/bin/sox", "/usr/local/bin/sox"].first { FileManager.default.isExecutableFile(atPath: $0) }
private let ffprobeTool = ["/usr/bin/ffprobe", "/usr/local/bin/ffprobe"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// `sonora convert -d aac@44100 -b 128000` and friends, read back by `sonora info` and by ffprobe.
@Suite(
    "sonora convert to compressed formats",
    .enabled(if: sonoraBinary != nil && soxTool != nil && ffprobeTool != nil, "needs the sonora binary, sox and ffprobe"))
struct ConvertCodecCLITests {
    static func json(_ outcome: Outcome) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
    }

    static func probe(_ path: String) throws -> String {
        try runProcess(ffprobeTool!, ["-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels", "-of", "csv=p=0", path]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(arguments: [
        ("song.m4a", ["-d", "aac@44100", "-b", "128000"], "aac,44100,2", "aac@44100x2"),
        ("song.caf", ["-d", "aac", "-b", "96000"], "aac,44100,2", "aac@44100x2"),
        ("song-alac.caf", ["-d", "alac"], "alac,44100,2", "alac@44100x2"),
        ("song-alac.m4a", ["-d", "alac"], "alac,44100,2", "alac@44100x2"),
        ("song.opus", ["-d", "opus@48000", "-b", "64000"], "opus,48000,2", "opus@48000x2"),
        ("song.aac", [], "aac,44100,2", "aac@44100x2"),
        ("song.mp3", ["-b", "192000"], "mp3,44100,2", ".mp3@44100x2"),
    ])
    func convertsAndBothReadersAgree(_ name: String, _ options: [String], _ probed: String, _ format: String) throws {
        try withTemporaryFolder { folder in
            let input = folder.path("in.wav")
            _ = try runProcess(soxTool!, ["-n", "-r", "44100", "-c", "2", "-b", "16", input, "synth", "2", "sine", "300-3000", "gain", "-6"])
            let output = folder.path(name)
            let converted = try runProcess(sonoraBinary!, ["convert", "--json", input, output] + options)
            #expect(converted.status == 0, "\(converted.stderr)")
            let result = try Self.json(converted)
            #expect(result["format"] as? String == format)
            #expect(try Self.probe(output) == probed)
            let info = try Self.json(try runProcess(sonoraBinary!, ["info", "--json", output]))
            #expect(info["format"] as? String == format)
            // The audio is exactly the input's length once priming and remainder are dropped
            // (converted at 48 kHz for Opus: 2 s either way).
            let rate = name.hasSuffix(".opus") ? 48000 : 44100
            if name.hasSuffix(".aac") {
                // ADTS has nowhere to keep the priming: every decoded frame counts (as in Core Audio).
                #expect((info["frames"] as? Int ?? 0) > 2 * rate && (info["frames"] as? Int ?? 0) <= 2 * rate + 2048 + 1024)
            } else {
                #expect(info["frames"] as? Int == 2 * rate, "\(name): \(info["frames"] ?? "none") frames")
            }
            #expect((info["packets"] as? Int ?? 0) > 0)
            if !name.hasSuffix(".aac") {
                #expect(info["primingFrames"] != nil, "\(name): no packet table")
            }
        }
    }

    @Test func badOptionsAreRefusedAndLeaveNothing() throws {
        try withTemporaryFolder { folder in
            let input = folder.path("in.wav")
            _ = try runProcess(soxTool!, ["-n", "-r", "44100", "-c", "1", "-b", "16", input, "synth", "0.2", "sine", "440"])
            let output = folder.path("x.m4a")
            let pcmInM4A = try runProcess(sonoraBinary!, ["convert", input, output, "-d", "LEI16"])
            #expect(pcmInM4A.status != 0 && pcmInM4A.stderr.contains("fmt?"), "\(pcmInM4A.stderr)")
            let opusAt44 = try runProcess(sonoraBinary!, ["convert", input, folder.path("x.opus"), "-d", "opus@44100"])
            #expect(opusAt44.status != 0 && opusAt44.stderr.contains("48000"), "\(opusAt44.stderr)")
            let bitRateOnPCM = try runProcess(sonoraBinary!, ["convert", input, folder.path("x.wav"), "-b", "128000"])
            #expect(bitRateOnPCM.status != 0 && bitRateOnPCM.stderr.contains("compressed"), "\(bitRateOnPCM.stderr)")
            let badQuality = try runProcess(sonoraBinary!, ["convert", input, folder.path("y.m4a"), "-q", "300"])
            #expect(badQuality.status != 0 && badQuality.stderr.contains("0…127"))
            let contents = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            #expect(contents == ["in.wav"], "left behind: \(contents)")
        }
    }
}
