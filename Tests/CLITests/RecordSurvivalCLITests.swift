import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `sonora record` treated as a hostile user treats it: killed while it records a compressed
/// CAF, and run out of disk. What it captured must survive both (a readable partial the next
/// run recovers; a finished file of what fitted, with the reason and a non-zero status).
@Suite("sonora record keeps what it captured", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct RecordSurvivalCLITests {
    typealias Running = RecordingSurvivalCLITests.Running
    let temporary = try! TemporaryFolder(prefix: "sonora-record-survival")
    var folder: String { temporary.path }

    /// Frames Sonora reads (`sonora info --json`); nil when it cannot read the file.
    func frames(_ path: String) -> Int? {
        guard let outcome = try? sonora("info", "--json", path), outcome.status == 0 else { return nil }
        return json(outcome.stdout)["frames"] as? Int
    }

    /// Polls until `condition` holds, for at most 20 s (a bound for a broken build, not a
    /// timing assertion: each poll runs `sonora info`, which is slow on a loaded machine).
    func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if condition() { return true }
            usleep(200_000)
        }
        return condition()
    }

    func partials(_ name: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasPrefix(".\(name).partial-") }
    }

    @Test("SIGKILL while recording a compressed CAF leaves a partial that reads; the next run recovers it beside the new take",
          arguments: ["ima4@16000", "alac@44100x2"])
    func killedCompressedRecordingSurvives(format: String) throws {
        let name = "killed-\(format.prefix(4)).caf"
        let recording = folder + "/" + name
        let run = try Running(["record", recording, "-d", format, "--device", "null"])
        let partial = folder + "/.\(name).partial-\(run.process.processIdentifier)"
        // Until the header has been brought up to date once (about a second of audio).
        var seen = 0
        #expect(eventually { seen = frames(partial) ?? 0; return seen > 0 }, "the partial never read as audio: \(run.errorText)")
        run.signal(SIGKILL)
        #expect(run.finish() == -SIGKILL)
        let kept = try #require(frames(partial), "Sonora cannot read \(partial) after SIGKILL")
        #expect(kept >= seen)

        let again = try Running(["record", recording, "-d", format, "--device", "null", "--seconds", "0.2"])
        #expect(again.finish() == 0, "\(again.errorText)")
        let recovered = folder + "/killed-\(format.prefix(4))-recovered-\(run.process.processIdentifier).caf"
        #expect(again.errorText.contains("recovered") && again.errorText.contains(recovered), "\(again.errorText)")
        #expect((frames(recovered) ?? 0) >= kept)
        #expect(partials(name).isEmpty)
        #expect((frames(recording) ?? 0) > 0, "the new take was not written")
    }

    @Test("a partial of a live recording is left alone; `sonora record --recover` moves a dead one into OUT when OUT is free, beside it otherwise")
    func explicitRecovery() throws {
        let name = "explicit.caf"
        let recording = folder + "/" + name
        let run = try Running(["record", recording, "-d", "ima4@16000", "--device", "null"])
        let partial = folder + "/.\(name).partial-\(run.process.processIdentifier)"
        #expect(eventually { (frames(partial) ?? 0) > 0 }, "\(run.errorText)")
        // Its process is alive: nothing to recover, and the partial is not touched.
        let early = try sonora("record", "--recover", recording)
        #expect(early.status == 0, "\(early.stderr)")
        #expect(FileManager.default.fileExists(atPath: partial))
        run.signal(SIGKILL)
        #expect(run.finish() == -SIGKILL)
        let kept = try #require(frames(partial))
        let recovery = try sonora("record", "--recover", recording)
        #expect(recovery.status == 0, "\(recovery.stderr)")
        #expect(recovery.stderr.contains(recording), "\(recovery.stderr)")
        #expect((frames(recording) ?? 0) >= kept)
        #expect(partials(name).isEmpty)

        // OUT taken: the next killed take is recovered beside it, OUT untouched.
        let before = try Data(contentsOf: URL(fileURLWithPath: recording))
        let second = try Running(["record", folder + "/other.caf", "-d", "ima4@16000", "--device", "null"])
        let secondPartial = folder + "/.other.caf.partial-\(second.process.processIdentifier)"
        #expect(eventually { (frames(secondPartial) ?? 0) > 0 }, "\(second.errorText)")
        second.signal(SIGKILL)
        #expect(second.finish() == -SIGKILL)
        let moved = folder + "/.\(name).partial-\(second.process.processIdentifier)"
        #expect(rename(secondPartial, moved) == 0)
        let again = try sonora("record", "--recover", recording)
        #expect(again.status == 0, "\(again.stderr)")
        let beside = folder + "/explicit-recovered-\(second.process.processIdentifier).caf"
        #expect((frames(beside) ?? 0) > 0, "\(again.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: recording)) == before, "--recover replaced OUT")
    }

    @Test("a full disk ends the recording: the reason on stderr, exit status 1, a finished file of what fitted",
          .enabled(if: SmallDisk.isAvailable, "mounting a small tmpfs needs root and a container that allows it"),
          arguments: ["ima4@48000x2", "LEI16@48000x2"])
    func fullDisk(format: String) throws {
        let disk = try SmallDisk(bytes: 160 << 10)
        defer { withExtendedLifetime(disk) {} }  // mounted until the test ends
        let recording = disk.path + "/take.caf"
        let run = try Running(["record", recording, "-d", format, "--device", "null", "--seconds", "30"])
        #expect(run.finish() == 1, "\(run.errorText)")
        #expect(run.errorText.contains("No space left on device"), "\(run.errorText)")
        let kept = try #require(frames(recording), "no readable recording on the full disk: \(run.errorText)")
        // 160 KiB holds well over half a second of either format (51 and 192 kB/s).
        #expect(kept > 20000, "\(kept) frames")
        #expect(run.errorText.contains("\(kept) frames"), "\(run.errorText)")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: disk.path)) ?? []
        #expect(left == ["take.caf"], "\(left)")
    }
}
