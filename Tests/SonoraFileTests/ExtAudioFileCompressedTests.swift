import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile
import SonoraTestSupport
import Testing

private let ffmpegInstalled = FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg")

/// ExtAudioFile over compressed files: what ffmpeg makes decodes to what ffmpeg decodes (same
/// libavcodec, same priming dropped), and what Sonora encodes comes back sample-aligned.
@Suite("ExtAudioFile with compressed files", .enabled(if: ffmpegInstalled, "ffmpeg is not installed"))
struct ExtAudioFileCompressedTests {
    /// Every frame of `path` through ExtAudioFile, interleaved, in the file's rate and channels.
    static func readAll(_ path: String) throws -> (samples: [Float], channels: Int, frameLength: Int) {
        let ext = try ExtAudioFile.open(path)
        let channels = Int(ext.file.dataFormat.channelsPerFrame)
        let client = StreamFormat.linearPCM(sampleRate: ext.file.dataFormat.sampleRate, channels: channels, sample: .float32, interleaved: true)
        try ext.setClientFormat(client)
        let buffers = try OwnedPCMBufferList(format: client, frameCapacity: 1000)
        var samples: [Float] = []
        while true {
            let read = try ext.read(into: buffers.list(frameCount: 1000), frameCount: 1000)
            if read == 0 { break }
            samples += buffers.bytes(0).bindMemory(to: Float.self).prefix(read * channels)
        }
        return (samples, channels, ext.frameLength)
    }

    @Test(arguments: [
        ("m4a", ["-c:a", "aac", "-b:a", "128k"]),
        ("mp3", ["-c:a", "libmp3lame", "-b:a", "128k"]),
        ("m4a", ["-c:a", "alac"]),
        ("opus", ["-c:a", "libopus", "-b:a", "96k"]),
        ("caf", ["-c:a", "alac", "-sample_fmt", "s32p"]),
    ])
    func decodesFFmpegsFilesAsFFmpegDoes(_ container: String, _ codec: [String]) throws {
        try withTemporaryFolder { folder in
            let path = folder.path("source.\(container)")
            let rate = container == "opus" ? 48000 : 44100
            _ = try FFmpegReference.ffmpeg(FFmpegReference.sourceArguments(rate: rate, channels: 2) + codec + [path])
            let reference = try FFmpegReference.decoded(path)
            let (samples, channels, frameLength) = try Self.readAll(path)
            #expect(channels == 2)
            // Sonora drops the remainder (the last packet's padding) as the file states;
            // ffmpeg keeps it for M4A and Opus, so the reference may be longer, never shorter.
            // ffmpeg's own CAF writer states every packet as full (its pakt is not exact).
            if container != "caf" {
                #expect(samples.count == 2 * rate * 2, "\(container) \(codec): \(samples.count / 2) frames of \(2 * rate)")
                #expect(frameLength * 2 == samples.count)
            }
            #expect(reference.count >= samples.count, "\(container) \(codec): \(samples.count / 2) frames, ffmpeg \(reference.count / 2)")
            let compared = min(samples.count, reference.count)
            let first = (0..<compared).first { samples[$0] != reference[$0] }
            #expect(first == nil, "\(container) \(codec): first difference at sample \(first ?? -1)")
        }
    }

    @Test(arguments: [("caf", "aac"), ("m4a", "aac"), ("caf", "alac"), ("m4a", "alac"), ("mp3", "mp3"), ("caf", "opus"), ("opus", "opus"), ("caf", "flac")])
    func roundTripsAreSampleAligned(_ container: String, _ codec: String) throws {
        try withTemporaryFolder { folder in
            let rate = codec == "opus" ? 48000.0 : 44100.0
            let frames = Int(rate) + 1234  // not a whole number of packets
            var noise = NoiseGenerator(color: .white, seed: 3)
            var left = [Float](repeating: 0, count: frames)
            var right = [Float](repeating: 0, count: frames)
            noise.render(into: &left, count: frames, amplitude: 0.25)
            for index in 0..<frames { right[index] = 0.5 * sin(Float(index) * 0.031) }
            let format = try StreamFormat(parsing: "\(codec)@\(Int(rate))x2")
            let path = folder.path("out.\(container)")
            let writer = try ExtAudioFile.create(path, type: AudioFileType(pathExtension: container)!, format: format, encoder: EncoderSettings(bitRate: codec == "alac" || codec == "flac" ? nil : 192_000))
            let client = StreamFormat.linearPCM(sampleRate: rate, channels: 2, sample: .float32, interleaved: true)
            try writer.setClientFormat(client)
            let buffers = try OwnedPCMBufferList(format: client, frameCapacity: 4096)
            var done = 0
            while done < frames {
                let count = min(4096, frames - done)
                let out = buffers.bytes(0).bindMemory(to: Float.self)
                for index in 0..<count {
                    out[2 * index] = left[done + index]
                    out[2 * index + 1] = right[done + index]
                }
                try writer.write(from: buffers.list(frameCount: count), frameCount: count)
                done += count
            }
            try writer.close()

            let (samples, _, frameLength) = try Self.readAll(path)
            #expect(frameLength == frames, "\(container)/\(codec): \(frameLength) frames read back, \(frames) written")
            #expect(samples.count == frames * 2)
            let decodedLeft = stride(from: 0, to: samples.count, by: 2).map { samples[$0] }
            if codec == "alac" || codec == "flac" {
                // Lossless at 16 bits or more: equal within the 16-bit step (the encoders take s16/s32).
                let worst = zip(decodedLeft, left).map { abs($0 - $1) }.max() ?? 1
                #expect(worst <= 1.0 / 32768, "\(container)/\(codec): worst difference \(worst)")
            } else {
                // Lossy: the best alignment of the noise channel is at lag 0.
                var best = (lag: Int.min, score: -Float.infinity)
                for lag in -64...64 {
                    var score: Float = 0
                    for index in 2000..<min(frames, decodedLeft.count) - 2000 { score += left[index] * decodedLeft[index + lag] }
                    if score > best.score { best = (lag, score) }
                }
                #expect(best.lag == 0, "\(container)/\(codec): aligned at lag \(best.lag)")
            }
        }
    }

    @Test func seekingLandsOnTheFrameAskedFor() throws {
        try withTemporaryFolder { folder in
            let path = folder.path("seek.m4a")
            _ = try FFmpegReference.ffmpeg(FFmpegReference.sourceArguments(rate: 44100, channels: 2) + ["-c:a", "alac", path])
            let (all, _, _) = try Self.readAll(path)
            let ext = try ExtAudioFile.open(path)
            let client = StreamFormat.linearPCM(sampleRate: 44100, channels: 2, sample: .float32, interleaved: true)
            try ext.setClientFormat(client)
            let buffers = try OwnedPCMBufferList(format: client, frameCapacity: 100)
            for frame in [0, 1, 4095, 4096, 4097, 50_000, 88_199] {
                try ext.seek(toFrame: frame)
                #expect(ext.position == frame)
                let read = try ext.read(into: buffers.list(frameCount: 100), frameCount: 100)
                let got = Array(buffers.bytes(0).bindMemory(to: Float.self).prefix(read * 2))
                #expect(got == Array(all[frame * 2..<min(all.count, frame * 2 + 200)]), "after a seek to \(frame)")
            }
        }
    }
}
