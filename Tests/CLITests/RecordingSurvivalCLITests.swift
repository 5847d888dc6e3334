import Foundation
import SonoraTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `sonora run` with a recorder on the null device, treated as users and init systems
/// treat it: killed, signalled with SIGUSR1/SIGUSR2/SIGQUIT, sent two quick SIGTERMs, and
/// run out of disk. The recording must survive each, and a failure must be reported at
/// once, in the status and in the exit status.
@Suite("sonora run keeps its recordings", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct RecordingSurvivalCLITests {
    let temporary = try! TemporaryFolder(prefix: "sonora-recordings")
    var folder: String { temporary.path }

    /// A running `sonora run`, its output readable while it runs (what SonoraTestSupport's
    /// RunningCommand does not offer: these tests wait for log lines before signalling).
    final class Running: @unchecked Sendable {
        let process = Process()
        final class Sink: Sendable { let data = Mutex(Data()) }
        let stdout = Sink()
        let stderr = Sink()
        private let done = DispatchGroup()

        init(_ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: sonoraBinary!)
            process.arguments = arguments
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            try process.run()
            for (pipe, sink) in [(out, stdout), (err, stderr)] {
                done.enter()
                Thread.detachNewThread { [done] in
                    while true {
                        let chunk = pipe.fileHandleForReading.availableData
                        if chunk.isEmpty { break }
                        sink.data.withLock { $0.append(chunk) }
                    }
                    done.leave()
                }
            }
        }

        var errorText: String { String(decoding: stderr.data.withLock { $0 }, as: UTF8.self) }
        var outputText: String { String(decoding: stdout.data.withLock { $0 }, as: UTF8.self) }

        func signal(_ number: Int32) { kill(process.processIdentifier, number) }

        /// Waits for the exit (bounded) and the end of its output.
        func finish() -> Int32? {
            for _ in 0..<300 where process.isRunning { usleep(50_000) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                return nil
            }
            process.waitUntilExit()
            _ = done.wait(timeout: .now() + 10)
            return process.terminationReason == .exit ? process.terminationStatus : -process.terminationStatus
        }

        deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    }

    func config(recording: String, socket: String? = nil) -> String {
        """
        engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
        device: {playback: "null"}
        nodes:
          - {id: tone, kind: ToneGenerator, parameters: {frequency: 440 Hz, level: -6 dB}}
          - {id: rec, kind: recorder, file: \(recording)}
        connections:
          - {from: tone, to: rec}
          - {from: rec, to: output}
        \(socket.map { "control: {socket: \($0), timeout: 1}\n" } ?? "")status: {interval: 0.2}
        """
    }

    func start(recording: String, socket: String? = nil, seconds: String? = nil) throws -> Running {
        let path = folder + "/run-\(UInt32.random(in: 0...UInt32.max)).yaml"
        try config(recording: recording, socket: socket).write(toFile: path, atomically: true, encoding: .utf8)
        return try Running(["run", path] + (seconds.map { ["--seconds", $0] } ?? []))
    }

    /// Frames sox reads (nil: sox cannot read the file, or is missing).
    func soxFrames(_ path: String) -> Int? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/soxi")
        process.arguments = ["-s", path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return process.terminationStatus == 0 ? Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) : nil
    }

    /// Frames Sonora reads (`sonora info --json`).
    func sonoraFrames(_ path: String) -> Int? {
        guard let outcome = try? sonora("info", "--json", path), outcome.status == 0 else { return nil }
        return json(outcome.stdout)["frames"] as? Int
    }

    /// Polls (bounded; no timing asserted) until `condition` holds.
    func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<300 {
            if condition() { return true }
            usleep(50_000)
        }
        return condition()
    }

    func partials(_ name: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasPrefix(".\(name).partial-") }
    }

    @Test("SIGKILL leaves a recording sox and Sonora read; the next run recovers it and says so")
    func killedRecordingSurvivesAndIsRecovered() throws {
        let recording = folder + "/killed.wav"
        let run = try start(recording: recording)
        let partial = folder + "/.killed.wav.partial-\(run.process.processIdentifier)"
        // Until the header has been rewritten once (after a second of audio).
        #expect(eventually { (soxFrames(partial) ?? 0) > 0 }, "the partial never read as audio: \(run.errorText)")
        run.signal(SIGKILL)
        #expect(run.finish() == -SIGKILL)
        let soxRead = try #require(soxFrames(partial), "sox cannot read \(partial)")
        #expect(soxRead >= 48000)
        #expect(sonoraFrames(partial) == soxRead)

        let again = try start(recording: recording, seconds: "0.5")
        #expect(again.finish() == 0, "\(again.errorText)")
        let recovered = folder + "/killed-recovered-\(run.process.processIdentifier).wav"
        #expect(again.errorText.contains("recovered") && again.errorText.contains("killed-recovered-"), "\(again.errorText)")
        // The header counted the last rewrite; recovery counts every whole frame on disk.
        let recoveredFrames = try #require(soxFrames(recovered))
        #expect(recoveredFrames >= soxRead && sonoraFrames(recovered) == recoveredFrames)
        #expect(again.errorText.contains("recovered \(recoveredFrames) frames"))
        #expect(partials("killed.wav").isEmpty)
        #expect((soxFrames(recording) ?? 0) > 0)
    }

    @Test("SIGUSR1, SIGUSR2 and SIGQUIT stop cleanly: exit 0, the file finished", arguments: [SIGUSR1, SIGUSR2, SIGQUIT])
    func otherSignalsStopCleanly(signal: Int32) throws {
        let recording = folder + "/signal-\(signal).wav"
        let run = try start(recording: recording)
        let partial = folder + "/.signal-\(signal).wav.partial-\(run.process.processIdentifier)"
        #expect(eventually { (soxFrames(partial) ?? 0) > 0 }, "\(run.errorText)")
        run.signal(signal)
        #expect(run.finish() == 0, "\(run.errorText)")
        let frames = try #require(soxFrames(recording), "no finished recording")
        #expect(frames >= 48000 && sonoraFrames(recording) == frames)
        #expect(partials("signal-\(signal).wav").isEmpty)
        #expect(run.errorText.contains("stopping"))
    }

    @Test("two quick SIGTERMs skip the fade but still finish the file")
    func twoQuickTerminations() throws {
        let recording = folder + "/twice.wav"
        let run = try start(recording: recording)
        let partial = folder + "/.twice.wav.partial-\(run.process.processIdentifier)"
        #expect(eventually { (soxFrames(partial) ?? 0) > 0 }, "\(run.errorText)")
        run.signal(SIGTERM)
        // The second once the first is being handled (sent together, the kernel merges them).
        #expect(eventually { run.errorText.contains("SIGTERM: stopping") })
        run.signal(SIGTERM)
        #expect(run.finish() == 0, "\(run.errorText)")
        let frames = try #require(soxFrames(recording), "no finished recording")
        #expect(frames >= 48000 && sonoraFrames(recording) == frames)
        #expect(partials("twice.wav").isEmpty)
    }

    @Test("a full disk: logged at once, in the status, the file kept, exit status 1",
          .enabled(if: SmallDisk.isAvailable, "mounting a small tmpfs needs root and a container that allows it"))
    func fullDisk() throws {
        let disk = try SmallDisk(bytes: 256 << 10)
        defer { withExtendedLifetime(disk) {} }  // mounted until the test ends
        let mount = disk.path
        let recording = mount + "/rec.wav"
        let socket = "/tmp/sonora-rec-\(getpid())-\(UInt16.random(in: 0...UInt16.max)).sock"
        let run = try start(recording: recording, socket: socket)
        // 24-bit stereo fills 256 KB in under a second; the error is logged while it runs.
        #expect(eventually { run.errorText.contains("recording stopped") }, "\(run.errorText)")
        #expect(run.process.isRunning)
        #expect(run.errorText.contains("No space left on device"))
        #expect(eventually { run.outputText.contains("recording failed: rec") }, "\(run.outputText)")
        let status = json(controlExchange(socket, "{\"cmd\":\"status\"}\n"))
        let failures = (status["status"] as? [String: Any])?["recorder_failures"] as? [[String: Any]]
        #expect(failures?.first?["node"] as? String == "rec", "\(status)")
        #expect(failures?.first?["file"] as? String == recording)
        run.signal(SIGTERM)
        #expect(run.finish() == 1, "\(run.errorText)")
        // What was written is there, under its name, with a header that says so.
        let kept = try #require(soxFrames(recording), "no readable recording on the full disk")
        #expect(kept > 40000 && sonoraFrames(recording) == kept)
        let left = (try? FileManager.default.contentsOfDirectory(atPath: mount)) ?? []
        #expect(left == ["rec.wav"], "\(left)")
    }

    @Test("a failed recording whose node a reload removed still makes the exit status 1",
          .enabled(if: SmallDisk.isAvailable, "mounting a small tmpfs needs root and a container that allows it"))
    func failureSurvivesTheReloadThatRemovesItsNode() throws {
        let disk = try SmallDisk(bytes: 256 << 10)
        defer { withExtendedLifetime(disk) {} }  // mounted until the test ends
        let mount = disk.path
        let path = folder + "/reload.yaml"
        try config(recording: mount + "/rec.wav").write(toFile: path, atomically: true, encoding: .utf8)
        let run = try Running(["run", path])
        #expect(eventually { run.errorText.contains("recording stopped") }, "\(run.errorText)")
        // The same pipeline without the recorder.
        try """
            engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
            device: {playback: "null"}
            nodes:
              - {id: tone, kind: ToneGenerator, parameters: {frequency: 440 Hz, level: -6 dB}}
            connections:
              - {from: tone, to: output}
            status: {interval: 0.2}
            """.write(toFile: path, atomically: true, encoding: .utf8)
        run.signal(SIGHUP)
        #expect(eventually { run.errorText.contains("reloaded") }, "\(run.errorText)")
        run.signal(SIGTERM)
        #expect(run.finish() == 1, "\(run.errorText)")
        #expect((soxFrames(mount + "/rec.wav") ?? 0) > 40000)
    }

}
