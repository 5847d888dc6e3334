import Foundation
import SonoraTestSupport
import Testing

/// FFmpeg loads when a codec or container of its is used, not with the binary: linked at
/// start-up, its ~90 libraries cost ~20 MB resident (and locked) in every `sonora run`.
@Suite struct FFmpegOnDemandCLITests {
    @Test func sonoraDoesNotLinkFFmpeg() throws {
        let binary = try #require(CLIRunner.sonoraBinary)
        let ldd = try CLIRunner(executable: "/usr/bin/ldd", timeout: 60).run(binary)
        #expect(ldd.status == 0)
        #expect(!ldd.stdout.contains("libavformat"), "\(ldd.stdout)")
        #expect(!ldd.stdout.contains("libavcodec"), "\(ldd.stdout)")
    }

    @Test func aPipelineOfWAVFilesMapsNoFFmpegAndAnMP4ReadLoadsIt() throws {
        let sonora = try #require(CLIRunner.sonora)
        try withTemporaryFolder { folder in
            try FileManager.default.createDirectory(atPath: folder.path("sounds"), withIntermediateDirectories: true)
            try FileManager.default.copyItem(
                atPath: PackageRoot.path("Configs/sounds/melody.wav"), toPath: folder.path("sounds/melody.wav"))
            let config = """
                engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
                device: {playback: "null"}
                nodes:
                  - {id: melody, kind: player, file: sounds/melody.wav, loop: true}
                  - {id: played, kind: recorder, file: played.wav}
                connections:
                  - {from: melody, to: played}
                  - {from: played, to: output}
                """
            try config.write(toFile: folder.path("wav.yaml"), atomically: true, encoding: .utf8)
            let running = try sonora.launch(["run", folder.path("wav.yaml"), "--seconds", "20"])
            // Running once the recorder has written audio: the player has opened its file by then.
            var maps = ""
            for _ in 0..<400 where running.isRunning {
                let size = (try? FileManager.default.attributesOfItem(atPath: folder.path("played.wav"))[.size] as? Int) ?? 0
                if size > 48_000 {
                    maps = (try? String(contentsOfFile: "/proc/\(running.processIdentifier)/maps", encoding: .utf8)) ?? ""
                    break
                }
                usleep(50_000)
            }
            running.signal(SIGINT)
            let outcome = running.wait(timeout: 60)
            #expect(outcome.status == 0, "\(outcome.stderr)")
            try #require(!maps.isEmpty, "the pipeline never ran: \(outcome.stderr)")
            #expect(!maps.contains("libavformat"))
            #expect(!maps.contains("libx265"))

            // The same binary still reads what only FFmpeg reads (an AAC file in MP4).
            let made = try CLIRunner(executable: "/usr/bin/ffmpeg", timeout: 120).run(
                "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=0.5", "-c:a", "aac", folder.path("tone.m4a"))
            try #require(made.status == 0, "\(made.stderr)")
            let info = try sonora.run("info", folder.path("tone.m4a"), "--json")
            #expect(info.status == 0, "\(info.stderr)")
            #expect(info.stdout.contains("\"channels\" : 1"), "\(info.stdout)")
        }
    }
}
