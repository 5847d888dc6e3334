import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import SonoraToolbox
import Synchronization
import Testing

/// `AudioQueueFileSource` (what `sonora play` feeds its queue with), rendered offline:
/// a start frame is exact, priming and remainder are trimmed, repetition is gapless.
@Suite("An output queue fed from files: start frame, priming, loop", .serialized)
struct AudioQueueFileSourceTests {
    /// Plays `paths` through one queue offline until it stops (or `maximumFrames` for a loop).
    static func render(_ paths: [String], startFrame: Int = 0, loops: Bool = false, maximumFrames: Int = 10_000_000) throws -> (samples: [Float], source: AudioQueueFileSource) {
        let files = try paths.map { try AudioFile.open($0) }
        let source = try AudioQueueFileSource(files: files, startFrame: startFrame, loops: loops)
        let format = source.format
        let queue = try AudioQueue(format: format) { queue, buffer in source.fill(queue, buffer) }
        if let cookie = files[0].magicCookie, !format.isLinearPCM, format.formatID != .appleIMA4 { try queue.setMagicCookie(cookie) }
        try queue.setOfflineRenderFormat(floatFormat(like: format))
        let stopped = Atomic<Bool>(false)
        try queue.addPropertyListener(.isRunning) { queue, _ in if !queue.isRunning { stopped.store(true, ordering: .releasing) } }
        for _ in 0..<3 {
            source.fill(queue, try queue.allocateBuffer(byteCapacity: source.bufferByteCapacity, packetDescriptionCapacity: source.packetDescriptionCapacity))
        }
        try queue.prime()
        try queue.start()
        var output: [Float] = []
        let channels = Int(format.channelsPerFrame)
        while !stopped.load(ordering: .acquiring) && output.count / channels < maximumFrames {
            output += floats(try queue.offlineRender(frames: 1000))
        }
        source.halt()
        try queue.dispose(immediate: true)
        // After the end the render side plays silence to the slice's end: keep what was enqueued.
        let played = source.enqueuedFrames.reduce(0) { $0 + $1.frames }
        for file in files { try file.close() }
        return (Array(output.prefix(min(played, maximumFrames) * channels)), source)
    }

    /// The file's frames as the file layer reads them (interleaved Float32).
    static func frames(of path: String) throws -> [Float] {
        let file = try AudioFile.open(path)
        defer { try? file.close() }
        let channels = Int(file.dataFormat.channelsPerFrame)
        let storage = try OwnedAudioBufferList(channelCount: channels, frameCapacity: file.frameCount)
        let list = storage.list(frameCount: file.frameCount)
        let read = try file.readFrames(into: list, from: 0)
        var interleaved = [Float](repeating: 0, count: read * channels)
        for channel in 0..<channels { for frame in 0..<read { interleaved[frame * channels + channel] = list[channel][frame] } }
        return interleaved
    }

    @Test("a 16-bit WAV from frame 1234: bit-exact, every remaining frame once")
    func startFramePCM() throws {
        try withTemporaryFolder { folder in
            let path = folder.path("noise.wav")
            try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", path, "synth", "0.5", "whitenoise", "gain", "-3"])
            let expected = try Self.frames(of: path)
            let played = try Self.render([path], startFrame: 1234).samples
            #expect(played.count == expected.count - 1234 * 2)
            #expect(played == Array(expected[(1234 * 2)...]))
        }
    }

    @Test("IMA4 from frame 100 (inside a 64-frame packet): the decoded frames from exactly there, none of the last packet's padding")
    func startFrameIMA4() throws {
        try withTemporaryFolder { folder in
            let path = folder.path("tone.caf")
            try runTool("/usr/bin/sox", ["-n", "-r", "22050", "-c", "1", "-e", "ima-adpcm", path, "synth", "0.3001", "sine", "300"])
            let file = try AudioFile.open(path)
            let frames = file.frameCount
            try file.close()
            let decoded = try decodedSamples(of: path)
            let played = try Self.render([path], startFrame: 100).samples
            #expect(played.count == frames - 100)
            #expect(played == Array(decoded[100..<frames]))
        }
    }

    @Test("AAC: the valid frames only; from a start frame the same samples as decoding from the top (within the codec's pre-roll tolerance)")
    func primingAndStartAAC() throws {
        try withTemporaryFolder { folder in
            let path = folder.path("tone.m4a")
            try runTool("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=0.5:sample_rate=44100", "-c:a", "aac", path])
            let file = try AudioFile.open(path)
            let info = try #require(file.packetTableInfo)
            let valid = file.frameCount
            try file.close()
            #expect(valid == 22050)
            let decoded = try decodedSamples(of: path)
            let whole = try Self.render([path]).samples
            #expect(whole.count == valid)
            #expect(whole == Array(decoded[Int(info.primingFrames)..<(Int(info.primingFrames) + valid)]))
            let start = 7000  // packet 8 of the stream (priming 1024): a seek with pre-roll
            let later = try Self.render([path], startFrame: start).samples
            #expect(later.count == valid - start)
            let reference = Array(whole[start...])
            let error = zip(later, reference).map { abs($0 - $1) }.max() ?? 1
            #expect(error < 1e-3, "largest difference \(error) after the seek")
        }
    }

    @Test("looping: the file again right after its last frame, no gap, no repeat")
    func gaplessLoop() throws {
        try withTemporaryFolder { folder in
            let path = folder.path("short.wav")
            try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", path, "synth", "0.05", "whitenoise"])
            let expected = try Self.frames(of: path)
            let (played, source) = try Self.render([path], loops: true, maximumFrames: expected.count * 3 + 100)
            #expect(Array(played.prefix(expected.count * 3)) == expected + expected + expected)
            #expect(source.passesStarted >= 4)
        }
    }

    @Test("two files in one queue: one after the other, gapless; a file in another format is refused")
    func twoFiles() throws {
        try withTemporaryFolder { folder in
            let first = folder.path("a.wav"), second = folder.path("b.wav"), other = folder.path("c.wav")
            try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", first, "synth", "0.05", "whitenoise"])
            try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", second, "synth", "0.03", "sine", "1000"])
            try runTool("/usr/bin/sox", ["-n", "-r", "44100", "-c", "1", "-b", "16", other, "synth", "0.03", "sine", "1000"])
            let (played, source) = try Self.render([first, second])
            #expect(played == (try Self.frames(of: first)) + (try Self.frames(of: second)))
            #expect(source.enqueuedFrames.map(\.frames) == [2400, 1440])
            #expect(throws: AudioError.self) { try AudioQueueFileSource(files: [try AudioFile.open(first), try AudioFile.open(other)]) }
            #expect(throws: AudioError.self) { try AudioQueueFileSource(files: [try AudioFile.open(first)], startFrame: 2400) }
        }
    }

    @Test("an empty file plays nothing and does not stop the list; a list of empty files is refused")
    func emptyFiles() throws {
        try withTemporaryFolder { folder in
            let first = folder.path("a.wav"), empty = folder.path("empty.wav"), last = folder.path("c.wav")
            try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", first, "synth", "0.02", "whitenoise"])
            try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", last, "synth", "0.01", "sine", "500"])
            try AudioFile.create(empty, type: .wave, format: .linearPCM(sampleRate: 48000, channels: 1, sample: .int16)).close()
            let (played, _) = try Self.render([empty, first, empty, last, empty])
            #expect(played == (try Self.frames(of: first)) + (try Self.frames(of: last)))
            #expect(throws: AudioError.self) { try AudioQueueFileSource(files: [try AudioFile.open(empty), try AudioFile.open(empty)]) }
        }
    }
}
