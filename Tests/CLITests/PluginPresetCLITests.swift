import Foundation
import SonoraTestSupport
import Testing

/// Presets named as configs name them (by label), and text that is no URI, must never
/// reach lilv unchecked: a label given to `--preset` crashed `plugins apply` and
/// `plugins save-preset` inside lilv ("attempt to map invalid URI").
@Suite("sonora plugins presets by label", .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct PluginPresetCLITests {
    static let leslie = "http://drobilla.net/plugins/mda/Leslie"

    /// Removed when the test process exits.
    static let folder = try! TemporaryFolder(prefix: "sonora-plugin-presets")
    static var directory: String { folder.path }

    static let input: String = {
        let path = directory + "/in.wav"
        _ = try? runProcess("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", path, "synth", "0.05", "sine", "440"])
        return path
    }()

    func run(_ arguments: [String]) throws -> Outcome { try runProcess(sonoraBinary!, arguments) }

    @Test func applyTakesAPresetLabel() throws {
        let output = Self.directory + "/slow.wav"
        let outcome = try run(["plugins", "apply", Self.leslie, "--preset", "slow", "--json", Self.input, output])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
        let controls = try #require(result["controls"] as? [String: Double])
        #expect(controls["hi_depth"] == 0.75)  // the Leslie-slow preset's value, as with its URI
    }

    @Test(arguments: ["Bass", "no such preset", "a\tb", "<x>", ":nothing"])
    func applyNamesThePresetsOfAnUnknownOne(preset: String) throws {
        let output = Self.directory + "/unknown-\(abs(preset.hashValue)).wav"
        let outcome = try run(["plugins", "apply", Self.leslie, "--preset", preset, Self.input, output])
        #expect(outcome.status == 1, "exit \(outcome.status): \(outcome.stderr)")
        #expect(outcome.stderr.contains("no preset"), "\(outcome.stderr)")
        #expect(outcome.stderr.contains("Default, Fast, Slow"), "the message lists the plugin's presets: \(outcome.stderr)")
        #expect(!outcome.stderr.contains("invalid URI"), "nothing reached serd: \(outcome.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    @Test func savePresetStartsFromALabel() throws {
        let bundle = Self.directory + "/fast.lv2"
        let outcome = try run(["plugins", "save-preset", Self.leslie, bundle, "--preset", "fast", "--label", "Fast copy"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(FileManager.default.fileExists(atPath: bundle + "/Fast_copy.ttl"))
        let bad = try run(["plugins", "save-preset", Self.leslie, Self.directory + "/bad.lv2", "--preset", "Bass"])
        #expect(bad.status == 1 && bad.stderr.contains("no preset 'Bass'"), "\(bad.stderr)")
    }

    @Test(arguments: ["not a uri", "Filter", "http://exa mple.org/x"])
    func aPluginThatIsNoURIIsRefusedBeforeLilv(uri: String) throws {
        let outcome = try run(["plugins", "info", uri])
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("is not a URI"), "\(outcome.stderr)")
        #expect(!outcome.stderr.contains("attempt to map"), "\(outcome.stderr)")
    }
}
