import Foundation
import SonoraTestSupport
import Testing

/// `sonora plugins …` against the installed LV2 plugins (Debian packages from `make test`).
@Suite("sonora plugins", .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct PluginsCLITests {
    /// Removed when the test process exits.
    static let folder = try! TemporaryFolder(prefix: "sonora-plugins-cli")
    static var directory: String { folder.path }

    /// A 0.1 s mono float WAV of a 440 Hz sine at 0.5, written by `sonora` itself is not possible — by sox.
    static let input: String = {
        let path = directory + "/in.wav"
        _ = try? runProcess("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "32", "-e", "float", path, "synth", "0.1", "sine", "440", "vol", "0.5"])
        return path
    }()

    @Test(arguments: [
        ["plugins", "--help"], ["plugins", "list", "--help"], ["plugins", "info", "--help"], ["plugins", "apply", "--help"],
        ["plugins", "save-preset", "--help"],
    ])
    func helpHasExamples(arguments: [String]) throws {
        let outcome = try run(arguments)
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("Examples:") && outcome.stdout.contains("sonora "))
    }

    func run(_ arguments: [String], environment: [String: String]? = nil) throws -> Outcome {
        try runProcess(sonoraBinary!, arguments, environment: environment)
    }

    @Test func listFiltersAndSaysWhatIsProvided() throws {
        let outcome = try run(["plugins", "--json", "eg-amp"])
        #expect(outcome.status == 0)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [[String: Any]])
        let amp = try #require(rows.first { $0["uri"] as? String == "http://lv2plug.in/plugins/eg-amp" })
        #expect(amp["supported"] as? Bool == true)
        #expect(amp["audioInputs"] as? Int == 1 && amp["controlInputs"] as? Int == 1)
    }

    @Test func listHonoursLV2Path() throws {
        let empty = Self.directory + "/empty"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let outcome = try run(["plugins"], environment: ["LV2_PATH": empty])
        #expect(outcome.status != 0)
        #expect(outcome.stderr.contains("no LV2 plugin"))
    }

    @Test func infoShowsPortsAndBuses() throws {
        let outcome = try run(["plugins", "info", "http://drobilla.net/plugins/mda/Delay"])
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("l_delay"))
        #expect(outcome.stdout.contains("input buses: mainIn [left_in, right_in]"))
    }

    @Test func applyPrintsControlOutputsAndLatency() throws {
        let output = Self.directory + "/latency.wav"
        let outcome = try run([
            "plugins", "apply", "http://plugin.org.uk/swh-plugins/artificialLatency", "-c", "delay", "10", "--block-size", "64",
            "--json", Self.input, output,
        ])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
        #expect(result["latencyFrames"] as? Int == 480)
        #expect((result["controlOutputs"] as? [String: Double])?["latency"] == 480)
        #expect(FileManager.default.fileExists(atPath: output))
    }

    @Test func applyTakesNegativeValuesAndEqualsForm() throws {
        let output = Self.directory + "/amp.wav"
        let spaced = try run(["plugins", "apply", "http://lv2plug.in/plugins/eg-amp", "-c", "gain", "-6", "--json", Self.input, output])
        #expect(spaced.status == 0, "\(spaced.stderr)")
        #expect(spaced.stdout.contains("\"gain\" : -6"))
        let equals = try run(["plugins", "apply", "http://lv2plug.in/plugins/eg-amp", "-c", "gain=-3", "--json", "--overwrite", Self.input, output])
        #expect(equals.stdout.contains("\"gain\" : -3"))
    }

    @Test(arguments: [
        (["plugins", "info", "http://example.org/nothing"], "no LV2 plugin http://example.org/nothing"),
        (["plugins", "apply", "http://lv2plug.in/plugins/eg-amp", "-c", "volume", "1", "IN", "OUT"], ""),
        (["plugins", "apply", "http://lv2plug.in/plugins/eg-amp", "-c", "gain", "loud", "IN", "OUT"], "'loud' is not a number"),
        (["plugins", "apply", "http://lv2plug.in/plugins/eg-amp", "only-one-file.wav"], "expected IN.wav OUT.wav"),
    ])
    func failuresExitNonZeroWithAReason(arguments: [String], reason: String) throws {
        let outcome = try run(arguments)
        #expect(outcome.status != 0)
        #expect(!outcome.stderr.isEmpty)
        if !reason.isEmpty { #expect(outcome.stderr.contains(reason), "\(outcome.stderr)") }
    }

    @Test func unknownControlIsNamed() throws {
        let outcome = try run(["plugins", "apply", "http://lv2plug.in/plugins/eg-amp", "-c", "volume", "1", Self.input, Self.directory + "/x.wav"])
        #expect(outcome.status != 0)
        #expect(outcome.stderr.contains("no control input 'volume'"))
    }

    @Test func applyTakesAPresetThenControls() throws {
        let output = Self.directory + "/leslie.wav"
        let outcome = try run([
            "plugins", "apply", "http://drobilla.net/plugins/mda/Leslie", "--preset",
            "http://drobilla.net/plugins/mda/presets#Leslie-slow", "-c", "output", "0.25", "--json", Self.input, output,
        ])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
        let controls = try #require(result["controls"] as? [String: Double])
        #expect(controls["hi_depth"] == 0.75)  // from the preset
        #expect(controls["output"] == 0.25)  // -c after it
    }

    @Test func savePresetWritesABundle() throws {
        let bundle = Self.directory + "/quiet.lv2"
        let outcome = try run(["plugins", "save-preset", "http://lv2plug.in/plugins/eg-amp", bundle, "-c", "gain=-12", "--label", "Quiet"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(FileManager.default.fileExists(atPath: bundle + "/manifest.ttl"))
        let preset = try String(contentsOfFile: bundle + "/Quiet.ttl", encoding: .utf8)
        #expect(preset.contains("-12"))
    }
}
