import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `sonora play`'s options beyond a plain play: --start-at, --loop, several files, the
/// progress line, the JSON result, SIGINT, and the errors. On the timer-paced `null`
/// device (real time, no sound card), with sox and ffmpeg files.
@Suite("sonora play options", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct PlayOptionsCLITests {
    struct Result: Decodable {
        struct File: Decodable {
            var file: String
            var format: String
            var frames: Int
            var seconds: Double
        }
        var device: String
        var files: [File]
        var interrupted: Bool
        var passes: Int
        var frames: Int
        var seconds: Double
        var underruns: Int
        var peak: Double
        var peakDBFS: Double
    }

    static func decode(_ outcome: Outcome) throws -> Result {
        try JSONDecoder().decode(Result.self, from: Data(outcome.stdout.utf8))
    }

    static func sine(_ path: String, rate: Int = 48000, channels: Int = 2, seconds: Double, frequency: Int = 440, gain: Double = -6) throws {
        let made = try runProcess("/usr/bin/sox", ["-n", "-r", "\(rate)", "-c", "\(channels)", "-b", "16", path, "synth", "\(seconds)", "sine", "\(frequency)", "gain", "\(gain)"])
        #expect(made.status == 0, "\(made.stderr)")
    }

    @Test("--help shows --start-at, --loop and an example")
    func help() throws {
        let outcome = try sonora("play", "--help")
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("--start-at") && outcome.stdout.contains("--loop") && outcome.stdout.contains("--progress"))
        #expect(outcome.stdout.contains("sonora play --device sonoraloop --volume -6 --start-at 12.5 song.m4a"))
    }

    @Test("several files play in order, each exactly once; the JSON has every field")
    func severalFiles() throws {
        let folder = try TemporaryFolder()
        let first = folder.path("a.wav"), second = folder.path("b.wav"), third = folder.path("c.wav")
        try Self.sine(first, seconds: 0.2)
        try Self.sine(second, seconds: 0.1, frequency: 880)
        try Self.sine(third, rate: 44100, channels: 1, seconds: 0.1)
        let outcome = try sonora("play", "--device", "null", "--json", first, second, third)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let result = try Self.decode(outcome)
        #expect(result.files.map(\.file) == [first, second, third])
        #expect(result.files.map(\.frames) == [9600, 4800, 4410])
        #expect(result.files.map(\.format) == ["LEI16@48000x2", "LEI16@48000x2", "LEI16@44100"])
        #expect(result.frames == 9600 + 4800 + 4410)
        #expect(abs(result.seconds - 0.4) < 1e-9)
        #expect(!result.interrupted && result.passes == 1 && result.device == "null")
        // sox's -6 dB sine peaks at 0.501; the meter reads it (sampled every 20 ms, so a little under at most).
        #expect(result.peak > 0.45 && result.peak <= 0.502, "\(result.peak)")
        #expect(abs(result.peakDBFS - 20 * log10(result.peak)) < 0.01)
        // No progress line in a pipe unless asked.
        #expect(!outcome.stderr.contains("peak"))
    }

    @Test("--start-at begins at the exact frame (PCM), and AAC plays exactly its frames: priming and remainder trimmed")
    func startAtAndPriming() throws {
        let folder = try TemporaryFolder()
        let wav = folder.path("tone.wav"), m4a = folder.path("tone.m4a"), mp3 = folder.path("tone.mp3")
        try Self.sine(wav, seconds: 0.5)
        _ = try runProcess("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=0.25", "-c:a", "aac", m4a])
        let opus = folder.path("tone.opus")
        // ffmpeg's LAME and libopus write the priming and remainder (LAME tag, pre-skip and end trim).
        _ = try runProcess("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=0.25:sample_rate=44100", "-c:a", "libmp3lame", mp3])
        _ = try runProcess("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=0.25:sample_rate=48000", "-c:a", "libopus", opus])
        let pcm = try Self.decode(try sonora("play", "--device", "null", "--json", "--start-at", "0.123", wav))
        #expect(pcm.frames == 24000 - 5904)  // 0.123 s = 5904 frames at 48 kHz
        let aac = try Self.decode(try sonora("play", "--device", "null", "--json", m4a))
        #expect(aac.frames == 11025, "AAC should play its valid frames only, not the priming and padding")
        let aacLater = try Self.decode(try sonora("play", "--device", "null", "--json", "--start-at", "0.1", m4a))
        #expect(aacLater.frames == 11025 - 4410)
        for (path, frames) in [(mp3, 11025), (opus, 12000)] {
            let info = try JSONSerialization.jsonObject(with: Data(try sonora("info", "--json", path).stdout.utf8)) as? [String: Any]
            #expect((info?["primingFrames"] as? Int ?? 0) > 0, "\(path): the encoder wrote no priming")
            #expect(info?["validFrames"] as? Int == frames)
            let played = try Self.decode(try sonora("play", "--device", "null", "--json", path)).frames
            #expect(played == frames, "\(path): played \(played) frames of \(frames)")
        }
    }

    @Test("--loop repeats gaplessly until SIGINT; then the JSON says interrupted and the exit status is 0")
    func loopUntilSIGINT() throws {
        let folder = try TemporaryFolder()
        let wav = folder.path("short.wav")
        try Self.sine(wav, seconds: 0.1)
        let process = try CLIRunner.sonora!.launch(["play", "--device", "null", "--loop", "--json", wav])
        // Once sonora handles SIGINT itself (its handler is in /proc's SigCgt),
        // a second of a 0.1 s file is several passes; nothing is timed against the clock below.
        #expect(Self.waitUntilIgnoring(SIGINT, process.processIdentifier), "sonora never took over SIGINT")
        usleep(1_000_000)
        #expect(process.isRunning)
        process.signal(SIGINT)
        let outcome = process.wait(timeout: 30)
        #expect(outcome.status == 0 && outcome.signal == nil, "\(outcome.stderr)")
        let result = try Self.decode(outcome)
        #expect(result.interrupted)
        #expect(result.passes >= 2, "\(result.passes) passes")
        #expect(result.frames > 4800, "\(result.frames) frames: more than one pass")
        // Passes counted are those that played: the last began within the frames played.
        #expect((result.frames - 1) / 4800 + 1 == result.passes, "\(result.frames) frames in \(result.passes) passes")
        #expect(result.files.first?.frames == result.frames)
    }

    @Test("on Sonora's loopback ALSA plugin (a real PCM): every frame of both files, in one queue")
    func onSonoraLoop() throws {
        let folder = try TemporaryFolder()
        let first = folder.path("a.wav"), second = folder.path("b.wav")
        try Self.sine(first, seconds: 0.3)
        try Self.sine(second, seconds: 0.2, frequency: 660)
        let outcome = try sonora("play", "--device", "sonoraloop", "--json", first, second)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let result = try Self.decode(outcome)
        #expect(result.files.map(\.frames) == [14400, 9600] && result.device == "sonoraloop")
        #expect(result.peak > 0.45, "\(result.peak)")
    }

    /// Waits (up to 30 s) until process `pid` catches or ignores `signal` (SigCgt/SigIgn in /proc).
    static func waitUntilIgnoring(_ signal: Int32, _ pid: Int32) -> Bool {
        for _ in 0..<3000 {
            if let status = Self.procStatus(pid),
               status.split(separator: "\n").contains(where: { line in
                   guard line.hasPrefix("SigCgt:") || line.hasPrefix("SigIgn:"),
                         let mask = UInt64(line.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16) else { return false }
                   return mask & (1 << UInt64(signal - 1)) != 0
               }) {
                return true
            }
            usleep(10_000)
        }
        return false
    }

    /// /proc/PID/status read with read(2) (its size is reported as 0).
    static func procStatus(_ pid: Int32) -> String? {
        let descriptor = open("/proc/\(pid)/status", O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 8192)
        let count = read(descriptor, &bytes, bytes.count)
        return count > 0 ? String(decoding: bytes[0..<count], as: UTF8.self) : nil
    }

    @Test("--progress shows the time and the peak on stderr")
    func progressLine() throws {
        let folder = try TemporaryFolder()
        let wav = folder.path("tone.wav")
        try Self.sine(wav, seconds: 0.8)
        let outcome = try sonora("play", "--device", "null", "--progress", wav)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.contains(" / 0:00.8") && outcome.stderr.contains("dBFS"), "\(outcome.stderr)")
        #expect(outcome.stdout.contains("38400 frames"))
    }

    @Test("bad arguments: non-zero, the reason on stderr naming the file")
    func badArguments() throws {
        let folder = try TemporaryFolder()
        let wav = folder.path("tone.wav")
        try Self.sine(wav, seconds: 0.1)
        let negative = try sonora("play", "--start-at", "-1", wav)
        #expect(negative.status != 0 && negative.stderr.contains("--start-at"))
        let beyond = try sonora("play", "--device", "null", "--start-at", "0.1", wav)
        #expect(beyond.status != 0 && beyond.stderr.contains(wav) && beyond.stderr.contains("beyond its end"), "\(beyond.stderr)")
        let garbage = folder.path("garbage.wav")
        try Data("this is not audio".utf8).write(to: URL(fileURLWithPath: garbage))
        let unreadable = try sonora("play", "--device", "null", wav, garbage)
        #expect(unreadable.status != 0 && unreadable.stderr.contains(garbage), "\(unreadable.stderr)")
        let empty = folder.path("empty.wav")
        _ = try runProcess("/usr/bin/sox", [wav, empty, "trim", "0", "0"])
        let nothing = try sonora("play", "--device", "null", empty)
        #expect(nothing.status != 0 && nothing.stderr.contains(empty) && nothing.stderr.contains("no audio frames"), "\(nothing.stderr)")
        let none = try sonora("play")
        #expect(none.status != 0)
        let badDevice = try sonora("play", "--device", "sonora_no_such_pcm", wav)
        #expect(badDevice.status != 0 && badDevice.stderr.contains("sonora_no_such_pcm"))
    }
}
