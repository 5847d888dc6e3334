import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every command that writes a file behaves like `convert`: an existing output is refused
/// without --overwrite, and none of its own inputs is ever written over — not as
/// `./a.wav`, not through a symlink, not with --overwrite. A failed render leaves nothing.
@Suite("No command overwrites a file it was not asked to", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct OutputSafetyCLITests {
    let temporary = try! TemporaryFolder(prefix: "sonora-outputs")
    var folder: String { temporary.path }

    func contents(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    }

    /// A mono WAV made by sox (16-bit unless told otherwise).
    func soxWAV(_ path: String, seconds: String = "0.5", rate: String = "16000", bits: String = "16", synth: [String] = ["whitenoise", "vol", "0.1"]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sox")
        process.arguments = ["-n", "-r", rate, "-c", "1", "-b", bits, path, "synth", seconds] + synth
        try? process.run()
        process.waitUntilExit()
    }

    /// What `sonora` runs in, relative paths included.
    func sonoraIn(_ directory: String, _ arguments: String...) throws -> Outcome {
        try CLIRunner(executable: "/bin/sh").run(["-c", "cd \"$0\" && exec \"$@\"", directory, sonoraBinary!] + arguments)
    }

    var mixer: String { packageRoot.appendingPathComponent("Configs/mixer.yaml").path }

    @Test("render refuses an existing output without --overwrite and replaces it with it")
    func renderRefusesAnExistingOutput() throws {
        let output = folder + "/mine.wav"
        try write("a user's file", to: output)
        let refused = try sonora("render", mixer, "--output", output, "--seconds", "0.2")
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("mine.wav exists; use --overwrite"), "\(refused.stderr)")
        #expect(contents(output) == Data("a user's file".utf8))
        let replaced = try sonora("render", mixer, "--output", output, "--seconds", "0.2", "--overwrite")
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect((contents(output)?.count ?? 0) > 9600 * 6)
    }

    @Test("render never writes over its input or its config, however it is named")
    func renderNeverWritesOverItsInputs() throws {
        let loop = packageRoot.appendingPathComponent("Configs/latency-loop.yaml").path
        let input = folder + "/take.wav"
        soxWAV(input, rate: "48000")
        let before = contents(input)
        symlink(input, folder + "/link.wav")
        for output in ["./take.wav", "take.wav", folder + "/link.wav", folder + "/../" + (folder as NSString).lastPathComponent + "/take.wav"] {
            let outcome = try sonoraIn(folder, "render", loop, "--input", "take.wav", "--output", output, "--overwrite")
            #expect(outcome.status != 0, "\(output)")
            #expect(outcome.stderr.contains("is the input"), "\(output): \(outcome.stderr)")
        }
        #expect(contents(input) == before)
        // The config itself (a .wav-named config is still the config).
        let config = folder + "/pipeline.wav"
        try FileManager.default.copyItem(atPath: mixer, toPath: config)
        let own = try sonora("render", config, "--output", config, "--seconds", "0.2", "--overwrite")
        #expect(own.status != 0 && own.stderr.contains("is the input"), "\(own.stderr)")
        #expect(contents(config) == contents(mixer))
        // No partial of any kind was left.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.contains(".partial") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test("a render that fails on a full disk leaves neither the output nor a partial",
          .enabled(if: SmallDisk.isAvailable, "mounting a small tmpfs needs root and a container that allows it"))
    func failedRenderLeavesNothing() throws {
        let disk = try SmallDisk(bytes: 256 << 10)
        defer { withExtendedLifetime(disk) {} }  // mounted until the test ends
        let mount = disk.path
        let outcome = try sonora("render", mixer, "--output", mount + "/big.wav", "--seconds", "5")
        #expect(outcome.status != 0)
        #expect(outcome.stderr.contains("No space left"), "\(outcome.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: mount).isEmpty)
    }

    @Test("render removes a header-only partial a killed render left, and says so")
    func renderCleansUpItsOwnStalePartial() throws {
        let output = folder + "/out.wav"
        let dead = TestProcess.deadProcessID()
        let stale = folder + "/.out.wav.partial-\(dead)"
        // What a render killed before its first write leaves: a 44-byte WAV header.
        var header = Data("RIFF".utf8) + Data([36, 0, 0, 0]) + Data("WAVEfmt ".utf8)
        header += Data([16, 0, 0, 0, 1, 0, 1, 0, 0x80, 0xBB, 0, 0, 0, 0x77, 1, 0, 2, 0, 16, 0]) + Data("data".utf8) + Data(count: 4)
        FileManager.default.createFile(atPath: stale, contents: header)
        let outcome = try sonora("render", mixer, "--output", output, "--seconds", "0.2")
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(!FileManager.default.fileExists(atPath: stale))
        #expect(outcome.stderr.contains("removed") && outcome.stderr.contains(".out.wav.partial-\(dead)"), "\(outcome.stderr)")
    }

    @Test("voice process never writes over MIC or REF, and refuses an existing OUT without --overwrite")
    func voiceProcessNeverWritesOverItsInputs() throws {
        let mic = folder + "/mic.wav", ref = folder + "/ref.wav"
        soxWAV(mic)
        soxWAV(ref)
        let micBefore = contents(mic), refBefore = contents(ref)
        for (out, directory) in [(mic, "/"), ("./mic.wav", folder), (ref, "/")] {
            let outcome = try sonoraIn(directory, "voice", "process", "--rate", "16000", mic, ref, out, "--overwrite")
            #expect(outcome.status != 0 && outcome.stderr.contains("is the input"), "\(out): \(outcome.stderr)")
        }
        #expect(contents(mic) == micBefore && contents(ref) == refBefore)
        let out = folder + "/out.wav"
        try write("keep me", to: out)
        let refused = try sonora("voice", "process", "--rate", "16000", mic, ref, out)
        #expect(refused.status != 0 && refused.stderr.contains("exists; use --overwrite"), "\(refused.stderr)")
        #expect(contents(out) == Data("keep me".utf8))
        let replaced = try sonora("voice", "process", "--rate", "16000", mic, ref, out, "--overwrite")
        #expect(replaced.status == 0, "\(replaced.stderr)")
    }

    @Test("voice process takes inputs a few samples apart (MIC sets the length) and keeps 16-bit WAVs 16-bit")
    func voiceProcessLengthsAndSampleFormat() throws {
        let mic = folder + "/mic.wav", short = folder + "/short.wav", long = folder + "/long.wav"
        soxWAV(mic, seconds: "0.5")  // 8000 samples
        soxWAV(short, seconds: "0.4998")  // 7997
        soxWAV(long, seconds: "0.5003")  // 8005
        for (ref, name) in [(short, "a.wav"), (long, "b.wav")] {
            let out = folder + "/" + name
            let outcome = try sonora("voice", "process", "--rate", "16000", mic, ref, out)
            #expect(outcome.status == 0, "\(outcome.stderr)")
            let info = json(try sonora("info", "--json", out).stdout)
            #expect(info["frames"] as? Int == 8000)
            // 16-bit mono WAV: 2 bytes a sample after a 44-byte header.
            #expect(contents(out)?.count == 44 + 16000)
        }
        // --format still chooses when given.
        let float = folder + "/float.wav"
        #expect(try sonora("voice", "process", "--rate", "16000", "--format", "f32", mic, short, float).status == 0)
        #expect((contents(float)?.count ?? 0) > 32000)
    }

    @Test("plugins apply never writes over IN and refuses an existing OUT without --overwrite")
    func pluginsApply() throws {
        let input = folder + "/in.wav"
        soxWAV(input, rate: "48000", bits: "32", synth: ["sine", "440"])
        let before = contents(input)
        let amp = "http://lv2plug.in/plugins/eg-amp"
        let own = try sonoraIn(folder, "plugins", "apply", amp, "-c", "gain", "-6", "--overwrite", "in.wav", "./in.wav")
        #expect(own.status != 0 && own.stderr.contains("is the input"), "\(own.stderr)")
        #expect(contents(input) == before)
        let out = folder + "/out.wav"
        try write("keep me", to: out)
        let refused = try sonora("plugins", "apply", amp, "-c", "gain", "-6", input, out)
        #expect(refused.status != 0 && refused.stderr.contains("exists; use --overwrite"), "\(refused.stderr)")
        #expect(contents(out) == Data("keep me".utf8))
        let replaced = try sonora("plugins", "apply", amp, "-c", "gain", "-6", "--overwrite", input, out)
        #expect(replaced.status == 0, "\(replaced.stderr)")
    }

    @Test("plugins save-preset refuses to replace a preset file without --overwrite")
    func savePreset() throws {
        let bundle = folder + "/mine.lv2"
        let amp = "http://lv2plug.in/plugins/eg-amp"
        #expect(try sonora("plugins", "save-preset", amp, bundle, "-c", "gain=-12", "--label", "Quiet").status == 0)
        let first = contents(bundle + "/Quiet.ttl")
        let again = try sonora("plugins", "save-preset", amp, bundle, "-c", "gain=-3", "--label", "Quiet")
        #expect(again.status != 0 && again.stderr.contains("Quiet.ttl exists; use --overwrite"), "\(again.stderr)")
        #expect(contents(bundle + "/Quiet.ttl") == first)
        #expect(try sonora("plugins", "save-preset", amp, bundle, "-c", "gain=-3", "--label", "Quiet", "--overwrite").status == 0)
        #expect(String(decoding: contents(bundle + "/Quiet.ttl") ?? Data(), as: UTF8.self).contains("-3"))
    }

    @Test("convert never writes over its input, even with --overwrite")
    func convertNeverWritesOverItsInput() throws {
        let input = folder + "/in.wav"
        soxWAV(input)
        let before = contents(input)
        symlink(input, folder + "/alias.wav")
        for output in [input, folder + "/alias.wav"] {
            let outcome = try sonora("convert", input, output, "--overwrite", "-d", "LEF32")
            #expect(outcome.status != 0 && outcome.stderr.contains("is the input"), "\(outcome.stderr)")
        }
        #expect(contents(input) == before)
    }


}
