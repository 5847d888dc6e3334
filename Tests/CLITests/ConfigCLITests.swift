import Foundation
import SonoraTestSupport
import Testing

/// `check`, `units` and `render` as issue 15 found them: structured JSON, the short names
/// configs use, help that names files that exist, and a bad `--input` blamed on itself.
@Suite("sonora check, units, render: the config paper cuts", .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct ConfigCLITests {
    /// Removed when the test process exits.
    static let scratch = try! TemporaryFolder(prefix: "sonora-config-cli")
    static var folder: String { scratch.path }

    func run(_ arguments: String...) throws -> Outcome { try runProcess(sonoraBinary!, arguments) }

    @Test func checkJSONGivesFileLineColumnAndMessage() throws {
        let config = Self.folder + "/bad.yaml"
        try "nodes:\n  - {id: t, kind: tonne}\nconnections:\n  - {from: t, to: output}\n".write(toFile: config, atomically: true, encoding: .utf8)
        let outcome = try run("check", "--json", config)
        #expect(outcome.status == 2)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
        #expect(report["ok"] as? Bool == false)
        let problem = try #require((report["diagnostics"] as? [[String: Any]])?.first)
        #expect(problem["file"] as? String == config)
        #expect(problem["line"] as? Int == 2 && problem["column"] as? Int == 19)
        #expect((problem["message"] as? String)?.hasPrefix("node 't': unknown kind 'tonne'; did you mean 'tone'?") == true)
    }

    @Test(arguments: [("tone", "ToneGenerator"), ("player", "FilePlayer"), ("mixer", "MultiChannelMixer"), ("voice", "VoiceProcessor"), ("eq", "GraphicEQ")])
    func unitsTakesTheNamesConfigsUse(kind: String, unit: String) throws {
        let outcome = try run("units", kind)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.hasPrefix("\(unit) ("), "\(outcome.stdout)")
    }

    @Test func renderHelpNamesConfigsThatExist() throws {
        let outcome = try run("render", "--help")
        let named = outcome.stdout.components(separatedBy: .whitespacesAndNewlines).filter { $0.hasPrefix("Configs/") }
        #expect(!named.isEmpty)
        for config in named {
            #expect(FileManager.default.fileExists(atPath: packageRoot.appendingPathComponent(config).path), "\(config) does not exist")
        }
    }

    @Test func aBadInputIsBlamedOnTheInputNotTheConfig() throws {
        let config = packageRoot.appendingPathComponent("Configs/intercom.yaml").path
        let missing = try run("render", config, "--input", Self.folder + "/no-such.wav", "--output", Self.folder + "/out.wav", "--seconds", "0.1")
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("--input \(Self.folder)/no-such.wav: "), "\(missing.stderr)")
        #expect(!missing.stderr.contains("intercom.yaml:1:1"), "\(missing.stderr)")
        let text = Self.folder + "/not-audio.wav"
        try "hello\n".write(toFile: text, atomically: true, encoding: .utf8)
        let notAudio = try run("render", config, "--input", text, "--output", Self.folder + "/out2.wav", "--seconds", "0.1")
        #expect(notAudio.status == 1 && notAudio.stderr.contains("--input \(text): "), "\(notAudio.stderr)")
    }

    @Test func checkOfflineAcceptsWhatRenderTakes() throws {
        let config = packageRoot.appendingPathComponent("Configs/intercom.yaml").path
        #expect(try run("check", "--offline", config).status == 0)
    }
}
