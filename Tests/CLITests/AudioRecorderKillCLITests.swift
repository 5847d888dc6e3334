import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

let recorderProcessBinary = PackageRoot.builtProduct("sonora-test-recorder")

/// AVAudioRecorder's promise kept by AudioRecorder itself (not only `sonora record`): a
/// program killed mid-recording leaves a playable file of everything but the last second,
/// never a zero-length or corrupt one — and the next recording of that name recovers it.
@Suite("AudioRecorder killed mid-recording", .serialized, .enabled(if: recorderProcessBinary != nil && sonoraBinary != nil, "sonora-test-recorder is not built"))
struct AudioRecorderKillCLITests {
    let temporary = try! TemporaryFolder(prefix: "sonora-recorder-kill")
    var folder: String { temporary.path }

    func frames(_ path: String) -> Int? {
        guard let outcome = try? runProcess(sonoraBinary!, ["info", "--json", path]), outcome.status == 0 else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])?["frames"] as? Int
    }

    @Test("SIGKILL leaves a partial that reads, with at least what the last header update counted; recovered beside the next take", arguments: ["lpcm", "ima4", "alac"])
    func killed(format: String) throws {
        let name = "take-\(format).caf"
        let recording = folder + "/" + name
        let program = try CLIRunner(executable: recorderProcessBinary!).launch([recording, "null", format])
        let partial = folder + "/.\(name).partial-\(program.processIdentifier)"
        // Until its header has been brought up to date at least twice (about two seconds).
        var seen = 0
        let deadline = Date().addingTimeInterval(60)  // a loaded 2-core machine spawns the debug `sonora info` slowly
        while Date() < deadline && seen < 48000 {
            seen = frames(partial) ?? 0
            usleep(200_000)
        }
        #expect(seen >= 48000, "the partial never read as a second of audio: \(program.isRunning)")
        program.signal(SIGKILL)
        let outcome = program.wait(timeout: 30)
        #expect(outcome.signal == SIGKILL || outcome.status == 128 + SIGKILL, "\(outcome)")
        let kept = try #require(frames(partial), "the killed recording's partial does not read")
        #expect(kept >= seen)
        #expect(!FileManager.default.fileExists(atPath: recording), "an unfinished take appeared under the final name")
        // The next take of that name recovers the killed one beside it.
        let again = try runProcess(sonoraBinary!, ["record", recording, "--device", "null", "--direct", "--seconds", "0.2"])
        #expect(again.status == 0, "\(again.stderr)")
        let recovered = folder + "/take-\(format)-recovered-\(program.processIdentifier).caf"
        #expect((frames(recovered) ?? 0) >= kept, "\(again.stderr)")
    }
}
