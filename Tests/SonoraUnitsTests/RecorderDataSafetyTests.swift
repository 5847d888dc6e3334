import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing
@testable import SonoraUnits

#if canImport(Glibc)
import Glibc
#endif

/// The file recorder loses nothing it was given: its header is kept current while it
/// records (a killed process leaves a readable file), a full disk stops it with what was
/// written kept and the error published, and the partials of dead processes are recovered.
@Suite("FileRecorder keeps what it recorded", .serialized)
struct RecorderDataSafetyTests {
    let temporary = try! TemporaryFolder(prefix: "sonora-recorder")
    var folder: String { temporary.path }

    /// tone → recorder → generic output, initialized (the recorder's file is open).
    static func graph(recordingTo path: String) throws -> (AudioGraph, FileRecorderUnit) {
        let graph = AudioGraph()
        let tone = graph.addNode(ToneGeneratorUnit(), name: "tone")
        let recorder = FileRecorderUnit()
        try recorder.setFile(path)
        let rec = graph.addNode(recorder, name: "rec")
        let output = graph.addNode(GenericOutputUnit())
        try graph.connect(tone, bus: 0, to: rec, input: 0)
        try graph.connect(rec, bus: 0, to: output, input: 0)
        try graph.initialize()
        return (graph, recorder)
    }

    /// Renders in slices no larger than the ring, waiting for the writer between them.
    static func render(_ graph: AudioGraph, _ recorder: FileRecorderUnit, seconds: Double) throws {
        let total = Int(seconds * 48000)
        var done = 0
        while done < total {
            let frames = min(12000, total - done)
            _ = try graph.renderOffline(frameCount: frames, sliceFrames: 480, startSampleTime: Double(done))
            done += frames
            _ = eventually { recorder.recordedFrames >= done || recorder.failure != nil }
        }
    }

    /// Polls (bounded; no timing asserted) until `condition` holds.
    static func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<5000 {
            if condition() { return true }
            usleep(1000)
        }
        return condition()
    }

    static func frames(_ path: String) -> Int? {
        guard let file = try? AudioFile.open(path) else { return nil }
        defer { try? file.close() }
        return file.frameCount
    }

    @Test func theHeaderIsCurrentWhileRecording() throws {
        let path = folder + "/live.wav"
        let (graph, recorder) = try Self.graph(recordingTo: path)
        try Self.render(graph, recorder, seconds: 1.5)
        // What a SIGKILL would leave now: the hidden partial, read as it stands on disk.
        let partial = AudioFile.partialPath(for: path)
        #expect(Self.eventually { (Self.frames(partial) ?? 0) >= 48000 }, "the partial reads as \(Self.frames(partial) ?? -1) frames")
        #expect(try recorder.finish() == 72000)
        #expect(Self.frames(path) == 72000)
        #expect(!FileManager.default.fileExists(atPath: partial))
        graph.uninitialize()
    }

    @Test(.enabled(if: SmallDisk.isAvailable, "mounting a small tmpfs needs root and a container that allows it"))
    func aFullDiskStopsTheRecordingAndKeepsWhatWasWritten() throws {
        let disk = try SmallDisk(bytes: 256 << 10)
        defer { withExtendedLifetime(disk) {} }  // mounted until the test ends
        let mount = disk.path
        let path = mount + "/rec.wav"
        let (graph, recorder) = try Self.graph(recordingTo: path)
        #expect(recorder.failure == nil)
        // 3 s of 24-bit stereo is 864 KB: the 256 KB disk fills in the first second.
        try Self.render(graph, recorder, seconds: 3)
        #expect(Self.eventually { recorder.failure != nil })
        let failure = try #require(recorder.failure)
        #expect(failure.message.contains("rec.wav") && failure.message.contains("No space left"), "\(failure.message)")
        // The audio still flows after the failure.
        let out = try graph.renderOffline(frameCount: 480)
        #expect(out[0].contains { $0 != 0 })
        let thrown = #expect(throws: AudioError.self) { try recorder.finish() }
        #expect(thrown?.message == failure.message)
        // The file is under its name with a header sized to what was written; no partial.
        let kept = try #require(Self.frames(path), "no readable file at \(path)")
        #expect(kept > 40000 && kept < 48000, "\(kept) frames")
        #expect(!FileManager.default.fileExists(atPath: AudioFile.partialPath(for: path)))
        if let sox = soxFrames(path) { #expect(sox == kept) }
        graph.uninitialize()
    }

    /// The rendering thread wakes the writer once `wakeInterval` of audio (960 frames at
    /// 48 kHz) has collected, not every slice: 750 slices of 64 frames are about 50 wake-ups
    /// (plus the writer's own 0.25 s interval), and every frame still reaches the file.
    @Test func theWriterIsWokenInBatchesNotEverySlice() throws {
        let path = folder + "/batched.wav"
        let (graph, recorder) = try Self.graph(recordingTo: path)
        let slices = 750
        _ = try graph.renderOffline(frameCount: slices * 64, sliceFrames: 64)
        // 48,000 frames are 50 wake-ups' worth exactly: the writer gets all of them without its interval.
        #expect(Self.eventually { recorder.recordedFrames == slices * 64 }, "\(recorder.recordedFrames) frames written")
        let wakeUps = recorder.writerWakeUps
        // Per slice this was 750; batched, 50 and a few interval wake-ups.
        #expect(wakeUps >= 1 && wakeUps < slices / 4, "\(wakeUps) wake-ups for \(slices) slices")
        #expect(try recorder.finish() == slices * 64)
        #expect(Self.frames(path) == slices * 64)
        graph.uninitialize()
    }

    @Test func partialsOfDeadProcessesAreRecoveredOrRemovedAndOthersLeftAlone() throws {
        let path = folder + "/take.wav"
        let dead = TestProcess.deadProcessID()
        // A partial holding audio (as a killed recorder leaves it), one holding only a
        // header, and one of a live process (pid 1).
        let withAudio = AudioFile.partialPath(for: path, processID: dead)
        let scratch = folder + "/scratch.wav"
        let file = try AudioFile.create(scratch, type: .wave, format: .linearPCM(sampleRate: 48000, channels: 2, sample: .int16))
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 4800)
        try file.writeFrames(from: buffers.list)
        try file.close()
        #expect(rename(scratch, withAudio) == 0)
        let otherDead = TestProcess.deadProcessID()
        let empty = AudioFile.partialPath(for: path, processID: otherDead)
        let emptyFile = try AudioFile.create(scratch, type: .wave, format: .linearPCM(sampleRate: 48000, channels: 2, sample: .int16))
        try emptyFile.close()
        #expect(rename(scratch, empty) == 0)
        let live = AudioFile.partialPath(for: path, processID: 1)
        #expect(FileManager.default.createFile(atPath: live, contents: Data(count: 100)))

        let (graph, recorder) = try Self.graph(recordingTo: path)
        let stale = recorder.staleRecordings
        let recovered = stale.first { $0.path == withAudio }
        guard case .recovered(let target, let frames) = recovered?.outcome else {
            Issue.record("not recovered: \(stale)")
            return
        }
        #expect(frames == 4800 && Self.frames(target) == 4800)
        #expect(target == folder + "/take-recovered-\(dead).wav")
        #expect(!FileManager.default.fileExists(atPath: withAudio))
        #expect(stale.contains { $0.path == empty && $0.outcome == .removedEmpty }, "\(stale)")
        #expect(!FileManager.default.fileExists(atPath: empty))
        #expect(FileManager.default.fileExists(atPath: live), "a live process's partial was touched")
        #expect(recovered?.description.contains("recovered 4800 frames") == true)
        try recorder.finish()
        graph.uninitialize()
    }

    @Test func aRecoveredWAVKeepsTheAudioWrittenAfterItsLastHeaderRewrite() throws {
        let path = folder + "/late.wav"
        let partial = AudioFile.partialPath(for: path, processID: TestProcess.deadProcessID())
        // 1000 stereo 16-bit frames whose header counts 400 (its last rewrite), plus a torn frame.
        let scratch = folder + "/scratch.wav"
        let file = try AudioFile.create(scratch, type: .wave, format: .linearPCM(sampleRate: 48000, channels: 2, sample: .int16))
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 1000)
        for frame in 0..<1000 { buffers.list.samples(0)[frame] = Float(frame) / 2000 }
        try file.writeFrames(from: buffers.list)
        try file.close()
        var bytes = try #require(FileManager.default.contents(atPath: scratch))
        #expect(bytes.count == 44 + 4000)
        func put(_ value: UInt32, at offset: Int) { withUnsafeBytes(of: value.littleEndian) { bytes.replaceSubrange(offset..<offset + 4, with: $0) } }
        put(36 + 1600, at: 4)
        put(1600, at: 40)
        bytes.append(contentsOf: [1, 2])
        #expect(FileManager.default.createFile(atPath: partial, contents: bytes))
        #expect(Self.frames(partial) == 400)

        let stale = AudioFile.recoverStalePartials(of: path)
        guard case .recovered(let target, let frames) = stale.first?.outcome else {
            Issue.record("not recovered: \(stale)")
            return
        }
        #expect(frames == 1000 && Self.frames(target) == 1000)
        #expect((try? FileManager.default.attributesOfItem(atPath: target)[.size] as? Int) == 44 + 4000)
        if let sox = soxFrames(target) { #expect(sox == 1000) }
    }



    /// Frames as sox reads them (nil without sox).
    func soxFrames(_ path: String) -> Int? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/soxi") else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/soxi")
        process.arguments = ["-s", path]
        let out = Pipe()
        process.standardOutput = out
        guard (try? process.run()) != nil else { return nil }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// The recorder's realtime side (ring copy + waking its Worker) makes no heap calls.
@Suite("No allocation while recording", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct RecorderAllocationTests {
    @Test func recordingRendersWithoutHeapCalls() throws {
        let temporary = try TemporaryFolder(prefix: "sonora-recorder-alloc")
        let folder = temporary.path
        let graph = AudioGraph()
        let tone = ToneGeneratorUnit()
        let recorder = FileRecorderUnit()
        let output = GenericOutputUnit()
        for unit in [tone, recorder, output] as [AudioUnit] { try unit.setMaximumFramesPerSlice(128) }
        try recorder.setFile(folder + "/rec.wav")
        let nodes = [graph.addNode(tone), graph.addNode(recorder), graph.addNode(output)]
        try graph.connect(nodes[0], bus: 0, to: nodes[1], input: 0)
        try graph.connect(nodes[1], bus: 0, to: nodes[2], input: 0)
        try graph.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 128)
        var rendered = 0
        func cycle() -> AudioError.Code {
            var flags = RenderActionFlags()
            defer { rendered += 128 }
            return graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(rendered)), frameCount: 128, into: buffers.list)
        }
        for _ in 0..<50 { #expect(cycle() == .noError) }
        var heapCalls = 0
        for _ in 0..<2_000 {
            AllocationCounter.begin()
            _ = cycle()
            heapCalls += AllocationCounter.end()
            // Let the writer keep up (the ring holds 2 s): offline renders run far ahead.
            if rendered - recorder.recordedFrames > 48000 { _ = RecorderDataSafetyTests.eventually { rendered - recorder.recordedFrames < 4800 } }
        }
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 2,000 cycles")
        #expect(recorder.lostWrites == 0)
        #expect(try recorder.finish() == rendered)
        graph.uninitialize()
    }
}
