import Foundation
import SonoraTestSupport
import Testing

/// `sonora sound`: a system sound from the shell, on the null device (no sound card here).
@Suite("sonora sound", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct SoundCLITests {
    struct Result: Decodable {
        var file: String?
        var device: String
        var frames: Int
        var seconds: Double
        var alert: Bool
    }

    static func beep(_ path: String, seconds: Double = 0.1) throws {
        let made = try runProcess("/usr/bin/sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", path, "synth", "\(seconds)", "sine", "880", "gain", "-12"])
        #expect(made.status == 0, "\(made.stderr)")
    }

    @Test("--help explains the rules and shows examples")
    func help() throws {
        let outcome = try sonora("sound", "--help")
        #expect(outcome.status == 0 && outcome.stdout.contains("shorter than 30 seconds") && outcome.stdout.contains("sonora sound --device null chime.wav"))
    }

    @Test("plays a WAV on the null device and returns once played; --json says what")
    func plays() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("chime.wav")
        try Self.beep(path)
        let outcome = try sonora("sound", "--device", "null", "--json", path)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let result = try JSONDecoder().decode(Result.self, from: Data(outcome.stdout.utf8))
        #expect(result.file == path && result.device == "null" && result.frames == 4800 && abs(result.seconds - 0.1) < 1e-9 && !result.alert)
    }

    @Test("--alert runs the alert command; --vibrate runs it alone")
    func alert() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("bell.wav")
        try Self.beep(path, seconds: 0.05)
        let marker = folder.path("rang")
        let outcome = try sonora("sound", "--device", "null", "--alert", "--alert-command", "touch '\(marker)'", path)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(FileManager.default.fileExists(atPath: marker))
        let vibrated = folder.path("vibrated")
        let vibrate = try sonora("sound", "--vibrate", "--alert-command", "touch '\(vibrated)'")
        #expect(vibrate.status == 0, "\(vibrate.stderr)")
        #expect(FileManager.default.fileExists(atPath: vibrated))
        let failing = try sonora("sound", "--vibrate", "--alert-command", "exit 3")
        #expect(failing.status != 0 && failing.stderr.contains("exited 3"), "\(failing.stderr)")
    }

    @Test("refusals: non-zero with the reason naming the file (MP3, 30 s, missing), and bad arguments")
    func refusals() throws {
        let folder = try TemporaryFolder()
        let mp3 = folder.path("beep.mp3")
        let made = try runProcess("/usr/bin/ffmpeg", ["-loglevel", "error", "-f", "lavfi", "-i", "sine=d=0.2", "-c:a", "libmp3lame", mp3])
        #expect(made.status == 0)
        let notPCM = try sonora("sound", "--device", "null", mp3)
        #expect(notPCM.status != 0 && notPCM.stderr.contains(mp3) && notPCM.stderr.contains("CAF, AIFF or WAV"), "\(notPCM.stderr)")
        let long = folder.path("long.wav")
        _ = try runProcess("/usr/bin/sox", ["-n", "-r", "8000", "-c", "1", "-b", "16", long, "synth", "30", "sine", "440"])
        let tooLong = try sonora("sound", "--device", "null", long)
        #expect(tooLong.status != 0 && tooLong.stderr.contains("30.00 s"), "\(tooLong.stderr)")
        let missing = try sonora("sound", "--device", "null", folder.path("missing.wav"))
        #expect(missing.status != 0 && missing.stderr.contains("missing.wav"))
        let nothing = try sonora("sound")
        #expect(nothing.status != 0 && nothing.stderr.contains("give a sound file"))
        let vibrateWithoutAction = try sonora("sound", "--vibrate")
        #expect(vibrateWithoutAction.status != 0 && vibrateWithoutAction.stderr.contains("alert action"))
        let badDevice = try sonora("sound", "--device", "sonora_no_such_pcm", folder.path("missing.wav"))
        #expect(badDevice.status != 0)
    }
}

/// `sonora sound` and `sonora record --recover` given what a hostile user gives.
@Suite("sonora sound and record --recover, hostile input", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct SoundHostileCLITests {
    @Test("empty, a directory, a truncated header, a negative --alert-seconds: non-zero with the reason naming what")
    func hostileSound() throws {
        let folder = try TemporaryFolder()
        let empty = folder.path("empty.wav"), directory = folder.path("dir.wav"), truncated = folder.path("trunc.wav")
        try Data().write(to: URL(fileURLWithPath: empty))
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        try Data("RIFF\u{0}\u{0}\u{0}\u{0}WAVEfmt ".utf8).write(to: URL(fileURLWithPath: truncated))
        for (path, reason) in [(empty, "0 bytes"), (directory, "is a directory"), (truncated, truncated)] {
            let outcome = try sonora("sound", "--device", "null", path)
            #expect(outcome.status != 0 && outcome.stderr.contains(path) && outcome.stderr.contains(reason), "\(outcome.stderr)")
        }
        let negative = try sonora("sound", "--vibrate", "--alert-gpio", "door", "--alert-seconds", "-1")
        #expect(negative.status != 0 && negative.stderr.contains("--alert-seconds -1.0 is outside"), "\(negative.stderr)")
    }

    @Test("record --recover with nothing to recover: says so; the file named is untouched")
    func recoverNothing() throws {
        let folder = try TemporaryFolder()
        let take = folder.path("take.wav")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: take))
        let outcome = try sonora("record", "--recover", take)
        #expect(outcome.status == 0 && outcome.stderr.contains("no partial recording"), "\(outcome.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: take)) == Data("keep me".utf8))
    }
}
