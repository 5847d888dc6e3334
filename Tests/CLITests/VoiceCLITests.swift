import Foundation
import SonoraTestSupport
import Testing

@Suite("sonora voice process", .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct VoiceCLITests {
    /// Removed with its contents after each test.
    let folder = try! TemporaryFolder(prefix: "sonora-voice-cli")
    var directory: URL { folder.url }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func writeFloats(_ values: [Float], to name: String) throws {
        var data = Data()
        for value in values { withUnsafeBytes(of: value.bitPattern.littleEndian) { data.append(contentsOf: $0) } }
        try data.write(to: directory.appendingPathComponent(name))
    }

    /// One second of a noise-like far end and its echo 30 ms later at half level.
    func scenario(count: Int = 16000) -> (mic: [Float], ref: [Float]) {
        let ref = TestSignal.whiteNoise(count: count, seed: 12345, amplitude: 0.1)
        let mic: [Float] = (0..<count).map { $0 >= 480 ? 0.5 * ref[$0 - 480] : 0 }
        return (mic, ref)
    }

    @Test("--help names the file contract and gives examples")
    func help() throws {
        for arguments in [["voice", "--help"], ["voice", "process", "--help"]] {
            let outcome = try runProcess(sonoraBinary!, arguments)
            let text = outcome.stdout
            #expect(outcome.status == 0)
            #expect(text.contains("Examples:") && text.contains("sonora voice process --rate 16000"))
        }
    }

    @Test("raw float32 in, same length out, metrics as JSON")
    func rawFloat() throws {
        let (mic, ref) = scenario()
        try writeFloats(mic, to: "mic.raw")
        try writeFloats(ref, to: "ref.raw")
        let outcome = try sonora("voice", "process", "--rate", "16000", "--json", path("mic.raw"), path("ref.raw"), path("out.raw"))
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let size = try FileManager.default.attributesOfItem(atPath: path("out.raw"))[.size] as? Int
        #expect(size == mic.count * 4)
        let json = try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any]
        let metrics = json?["metrics"] as? [String: Any]
        #expect((metrics?["estimatedDelay"] as? Double).map { abs($0 - 0.03) < 0.001 } == true)
        #expect(json?["latencyFrames"] as? Int == 256)
    }

    @Test("int16 raw and WAV by extension")
    func int16AndWAV() throws {
        let (mic, ref) = scenario()
        var micData = Data(), refData = Data()
        for (m, r) in zip(mic, ref) {
            withUnsafeBytes(of: Int16(m * 32767).littleEndian) { micData.append(contentsOf: $0) }
            withUnsafeBytes(of: Int16(r * 32767).littleEndian) { refData.append(contentsOf: $0) }
        }
        try micData.write(to: directory.appendingPathComponent("mic.s16"))
        try refData.write(to: directory.appendingPathComponent("ref.s16"))
        let raw = try sonora("voice", "process", "--rate", "16000", "--format", "s16", path("mic.s16"), path("ref.s16"), path("out.s16"))
        #expect(raw.status == 0, "\(raw.stderr)")
        #expect((try FileManager.default.attributesOfItem(atPath: path("out.s16"))[.size] as? Int) == mic.count * 2)
        // WAV in and out (convert the raw files through sonora's own converter-free path: write WAVs by hand).
        try wav16(mic, to: "mic.wav")
        try wav16(ref, to: "ref.wav")
        let wav = try sonora("voice", "process", "--rate", "16000", path("mic.wav"), path("ref.wav"), path("out.wav"))
        #expect(wav.status == 0, "\(wav.stderr)")
        let info = try sonora("info", "--json", path("out.wav"))
        #expect(info.stdout.contains("16000"))
    }

    @Test("a bad format, a wrong WAV rate and a missing file fail with the file named")
    func errors() throws {
        let (mic, _) = scenario()
        try writeFloats(mic, to: "mic.raw")
        // (Inputs of different lengths are accepted: OutputSafetyCLITests.)
        var outcome = try sonora("voice", "process", "--rate", "16000", "--format", "f64", path("mic.raw"), path("mic.raw"), path("out.raw"))
        #expect(outcome.status != 0 && outcome.stderr.contains("f64"))
        try Data([1, 2, 3]).write(to: directory.appendingPathComponent("odd.raw"))
        outcome = try sonora("voice", "process", "--rate", "16000", path("odd.raw"), path("odd.raw"), path("out.raw"))
        #expect(outcome.status != 0 && outcome.stderr.contains("odd.raw"))
        outcome = try sonora("voice", "process", "--rate", "16000", path("missing.raw"), path("mic.raw"), path("out.raw"))
        #expect(outcome.status != 0 && outcome.stderr.contains("missing.raw"))
        try wav16(mic, to: "mic.wav")
        outcome = try sonora("voice", "process", "--rate", "48000", path("mic.wav"), path("mic.wav"), path("out.wav"))
        #expect(outcome.status != 0 && outcome.stderr.contains("16000") && outcome.stderr.contains("48000"))
        outcome = try sonora("voice", "process", "--rate", "1000", path("mic.raw"), path("mic.raw"), path("out.raw"))
        #expect(outcome.status != 0 && outcome.stderr.contains("1000"))
        try Data("RIFF....WAVEjunk".utf8).write(to: directory.appendingPathComponent("bad.wav"))
        outcome = try sonora("voice", "process", "--rate", "16000", path("bad.wav"), path("bad.wav"), path("out.wav"))
        #expect(outcome.status != 0 && outcome.stderr.contains("bad.wav"))
    }

    /// A minimal 16-bit mono WAV at 16 kHz.
    func wav16(_ samples: [Float], to name: String) throws {
        var data = Data()
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8)); u32(UInt32(36 + samples.count * 2)); data.append(contentsOf: Array("WAVE".utf8))
        data.append(contentsOf: Array("fmt ".utf8)); u32(16); u16(1); u16(1); u32(16000); u32(32000); u16(2); u16(16)
        data.append(contentsOf: Array("data".utf8)); u32(UInt32(samples.count * 2))
        for s in samples { withUnsafeBytes(of: Int16(max(-1, min(1, s)) * 32767).littleEndian) { data.append(contentsOf: $0) } }
        try data.write(to: directory.appendingPathComponent(name))
    }
}
