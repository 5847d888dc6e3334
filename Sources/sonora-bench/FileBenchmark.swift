import CFileBenchAnchor
import CSndfile
import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile

/// `sonora-bench files`: decoding and encoding through `AudioFile` (WAV 16-bit,
/// FLAC, IMA4) and sample-rate conversion through `Resampler`, beside the same
/// work done by calling libsndfile / libsoxr directly from C, in one run — the C
/// side also ends with (or starts from) one buffer per channel, as Sonora does. IMA4 is
/// Sonora's own codec in CAF; its anchor is libsndfile's IMA ADPCM in WAV (the
/// same algorithm in C).
struct FileBenchmark {
    var seconds: Double
    var trials: Int
    let rate = 48000
    let channels = 2
    let block = 4096

    struct Case {
        var metric: String
        var sonora: () throws -> Double
        var anchor: () throws -> Double
    }

    func run() throws -> (rows: [BenchmarkRow], notes: [String]) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sonora-bench-files-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

        let frames = Int(seconds * Double(rate))
        let audio = try OwnedAudioBufferList(channelCount: channels, frameCapacity: frames)
        var noise = NoiseGenerator(color: .pink, seed: 7)
        for channel in 0..<channels { noise.render(into: audio.list.samples(channel), count: frames, amplitude: 0.3) }
        let channelPointers: [UnsafePointer<Float>?] = (0..<channels).map { UnsafePointer(audio.list.samples($0)) }

        // Source files for the decoders.
        let wavFormat = StreamFormat.linearPCM(sampleRate: Double(rate), channels: channels, sample: .int16)
        let flacFormat = StreamFormat.compressed(.flac, sampleRate: Double(rate), channels: channels)
        let imaFormat = StreamFormat.appleIMA4(sampleRate: Double(rate), channels: channels)
        for (name, type, format) in [("in.wav", AudioFileType.wave, wavFormat), ("in.flac", .flac, flacFormat), ("in.caf", .caf, imaFormat)] {
            let file = try AudioFile.create(path(name), type: type, format: format, erase: true)
            try file.writeFrames(from: audio.list)
            try file.close()
        }
        _ = channelPointers.withUnsafeBufferPointer {
            sonora_anchor_encode(path("ima.wav"), Int32(SF_FORMAT_WAV | SF_FORMAT_IMA_ADPCM), Int32(channels), Int32(rate), $0.baseAddress, frames, Int32(block))
        }

        func decodeThroughSonora(_ name: String) throws -> Double {
            let start = HostTime.now
            let file = try AudioFile.open(path(name))
            let buffers = try OwnedAudioBufferList(channelCount: channels, frameCapacity: block)
            while try file.readFrames(into: buffers.list) > 0 {}
            try file.close()
            return Double(HostTime.now - start) / 1e9
        }
        func encodeThroughSonora(_ name: String, _ type: AudioFileType, _ format: StreamFormat) throws -> Double {
            let start = HostTime.now
            let file = try AudioFile.create(path(name), type: type, format: format, erase: true)
            var done = 0
            while done < frames {
                let count = min(block, frames - done)
                try file.writeFrames(from: audio.list.frames(from: done, count: count))
                done += count
            }
            try file.close()
            return Double(HostTime.now - start) / 1e9
        }
        func anchorDecode(_ name: String) -> Double { sonora_anchor_decode(path(name), Int32(block)) }
        func anchorEncode(_ name: String, _ format: Int) -> Double {
            channelPointers.withUnsafeBufferPointer {
                sonora_anchor_encode(path(name), Int32(format), Int32(channels), Int32(rate), $0.baseAddress, frames, Int32(block))
            }
        }
        func resampleThroughSonora() throws -> Double {
            let resampler = try Resampler(from: 44100, to: 48000, channels: channels, quality: .high)
            let output = try OwnedAudioBufferList(channelCount: channels, frameCapacity: block * 2)
            let start = HostTime.now
            var done = 0
            while done < frames {
                let count = min(block, frames - done)
                let (consumed, produced) = resampler.process(audio.list.frames(from: done, count: count), into: output.list)
                done += consumed
                if consumed == 0 && produced == 0 { break }
            }
            return Double(HostTime.now - start) / 1e9
        }
        func resampleAnchor() -> Double {
            channelPointers.withUnsafeBufferPointer {
                sonora_anchor_resample($0.baseAddress, Int32(channels), frames, 44100, 48000, Int32(block))
            }
        }

        // Compressed sources for the codec rows, encoded by Sonora itself.
        let aacFormat = StreamFormat.compressed(.mpeg4AAC, sampleRate: Double(rate), channels: channels)
        let mp3Format = StreamFormat.compressed(.mpegLayer3, sampleRate: Double(rate), channels: channels)
        let alacFormat = StreamFormat.compressed(.appleLossless, sampleRate: Double(rate), channels: channels)
        let canonical = StreamFormat.canonical(sampleRate: Double(rate), channels: channels)
        let pcmPointers = UnsafeMutablePointer<UnsafeMutableRawPointer>.allocate(capacity: channels)
        defer { pcmPointers.deallocate() }
        for channel in 0..<channels { pcmPointers[channel] = UnsafeMutableRawPointer(audio.list.samples(channel)) }
        func encodeThroughExtAudioFile(_ name: String, _ type: AudioFileType, _ format: StreamFormat, bitRate: Int?) throws -> Double {
            let start = HostTime.now
            let file = try ExtAudioFile.create(path(name), type: type, format: format, encoder: EncoderSettings(bitRate: bitRate), erase: true)
            try file.setClientFormat(canonical)
            var done = 0
            let blockPointers = UnsafeMutablePointer<UnsafeMutableRawPointer>.allocate(capacity: channels)
            defer { blockPointers.deallocate() }
            while done < frames {
                let count = min(block, frames - done)
                for channel in 0..<channels { blockPointers[channel] = pcmPointers[channel] + done * 4 }
                try file.write(from: PCMBufferList(format: canonical, buffers: blockPointers, frameCount: count), frameCount: count)
                done += count
            }
            try file.close()
            return Double(HostTime.now - start) / 1e9
        }
        func decodeThroughExtAudioFile(_ name: String) throws -> Double {
            let start = HostTime.now
            let file = try ExtAudioFile.open(path(name))
            let client = StreamFormat.canonical(sampleRate: file.file.dataFormat.sampleRate, channels: channels)
            try file.setClientFormat(client)
            let buffers = try OwnedPCMBufferList(format: client, frameCapacity: block)
            while try file.read(into: buffers.list(frameCount: block), frameCount: block) > 0 {}
            try file.close()
            return Double(HostTime.now - start) / 1e9
        }
        func anchorCodecDecode(_ name: String) -> Double { sonora_anchor_codec_decode(path(name)) }
        func anchorCodecEncode(_ encoder: String, _ name: String, bitRate: Int) -> Double {
            channelPointers.withUnsafeBufferPointer {
                sonora_anchor_codec_encode(encoder, path(name), Int32(channels), Int32(rate), bitRate, $0.baseAddress, frames)
            }
        }
        _ = try encodeThroughExtAudioFile("in.m4a", .m4a, aacFormat, bitRate: 128_000)
        _ = try encodeThroughExtAudioFile("in.mp3", .mp3, mp3Format, bitRate: 192_000)
        _ = try encodeThroughExtAudioFile("in-alac.m4a", .m4a, alacFormat, bitRate: nil)

        var cases = [
            Case(metric: "decode WAV 16-bit", sonora: { try decodeThroughSonora("in.wav") }, anchor: { anchorDecode("in.wav") }),
            Case(metric: "decode FLAC", sonora: { try decodeThroughSonora("in.flac") }, anchor: { anchorDecode("in.flac") }),
            Case(metric: "decode IMA4 (CAF; anchor: libsndfile IMA ADPCM WAV)", sonora: { try decodeThroughSonora("in.caf") }, anchor: { anchorDecode("ima.wav") }),
            Case(metric: "encode WAV 16-bit", sonora: { try encodeThroughSonora("out.wav", .wave, wavFormat) }, anchor: { anchorEncode("anchor.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16) }),
            Case(metric: "encode FLAC", sonora: { try encodeThroughSonora("out.flac", .flac, flacFormat) }, anchor: { anchorEncode("anchor.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16) }),
            Case(metric: "encode IMA4 (CAF; anchor: libsndfile IMA ADPCM WAV)", sonora: { try encodeThroughSonora("out.caf", .caf, imaFormat) }, anchor: { anchorEncode("anchor-ima.wav", SF_FORMAT_WAV | SF_FORMAT_IMA_ADPCM) }),
            Case(metric: "resample 44.1 → 48 kHz (libsoxr HQ)", sonora: resampleThroughSonora, anchor: resampleAnchor),
        ]
        let codecCases = [
            Case(metric: "decode AAC (M4A)", sonora: { try decodeThroughExtAudioFile("in.m4a") }, anchor: { anchorCodecDecode("in.m4a") }),
            Case(metric: "decode MP3", sonora: { try decodeThroughExtAudioFile("in.mp3") }, anchor: { anchorCodecDecode("in.mp3") }),
            Case(metric: "decode ALAC (M4A)", sonora: { try decodeThroughExtAudioFile("in-alac.m4a") }, anchor: { anchorCodecDecode("in-alac.m4a") }),
            Case(
                metric: "encode AAC 128 kbit/s (CAF)", sonora: { try encodeThroughExtAudioFile("out-aac.caf", .caf, aacFormat, bitRate: 128_000) },
                anchor: { anchorCodecEncode("aac", "anchor.aac", bitRate: 128_000) }),
        ]
        let codecAnchor = "libavformat/libavcodec from C + 5 %"
        cases += codecCases
        var rows: [BenchmarkRow] = []
        var notes = ["\(seconds) s of stereo audio at \(rate) Hz per trial, \(trials) trials, median of per-trial ratios"]
        for testCase in cases {
            var ratios: [Double] = []
            var sonoraTimes: [Double] = []
            var anchorTimes: [Double] = []
            for trial in 0..<trials {
                // Alternate which goes first, so neither always finds the page cache warm.
                var a = 0.0
                var s = 0.0
                if trial % 2 == 0 {
                    a = try testCase.anchor()
                    s = try testCase.sonora()
                } else {
                    s = try testCase.sonora()
                    a = try testCase.anchor()
                }
                guard a > 0 else { throw BenchmarkFailure("\(testCase.metric): the C anchor failed") }
                ratios.append(s / a)
                sonoraTimes.append(s)
                anchorTimes.append(a)
            }
            rows.append(
                BenchmarkRow(
                    metric: "\(testCase.metric) ÷ C", unit: "ratio", sonora: median(ratios),
                    anchor: codecCases.contains { $0.metric == testCase.metric } ? codecAnchor : "libsndfile / libsoxr from C + 5 %",
                    anchorValue: 1.05, better: .lower))
            let megabytes = Double(frames * channels * 4) / 1e6
            notes.append(String(format: "  %@: Sonora %.0f MB/s, C %.0f MB/s (float samples)", testCase.metric, megabytes / median(sonoraTimes), megabytes / median(anchorTimes)))
        }
        if let row = try convertAgainstFFmpeg(source: path("in.wav"), output: path, notes: &notes) { rows.append(row) }
        return (rows, notes)
    }

    /// `sonora convert in.wav out.m4a -b 128000` ÷ `ffmpeg -i in.wav -c:a aac -b:a 128k out.m4a`,
    /// whole processes timed the same way. Goal ≤ 1.0. Skipped (with a note) without ffmpeg.
    func convertAgainstFFmpeg(source: String, output: (String) -> String, notes: inout [String]) throws -> BenchmarkRow? {
        let ffmpeg = "/usr/bin/ffmpeg"
        let sonora = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("sonora").path
        guard FileManager.default.isExecutableFile(atPath: ffmpeg), FileManager.default.isExecutableFile(atPath: sonora) else {
            notes.append("  sonora convert to AAC ÷ ffmpeg: skipped (needs \(ffmpeg) and \(sonora))")
            return nil
        }
        func timed(_ executable: String, _ arguments: [String]) throws -> Double {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            let start = HostTime.now
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw BenchmarkFailure("\(executable) \(arguments.joined(separator: " ")) failed") }
            return Double(HostTime.now - start) / 1e9
        }
        var ratios: [Double] = []
        for trial in 0..<trials {
            let sonoraArguments = ["convert", source, output("sonora.m4a"), "-b", "128000", "--overwrite"]
            let ffmpegArguments = ["-nostdin", "-v", "error", "-y", "-i", source, "-c:a", "aac", "-b:a", "128k", output("ffmpeg.m4a")]
            func runSonora() throws -> Double { try timed(sonora, sonoraArguments) }
            func runFFmpeg() throws -> Double { try timed(ffmpeg, ffmpegArguments) }
            // Alternate which goes first, so neither always finds the page cache warm.
            var s = 0.0
            var f = 0.0
            if trial % 2 == 0 {
                s = try runSonora()
                f = try runFFmpeg()
            } else {
                f = try runFFmpeg()
                s = try runSonora()
            }
            ratios.append(s / f)
        }
        notes.append("  sonora convert to AAC 128 kbit/s (M4A) against ffmpeg -c:a aac, whole processes, \(trials) trials")
        return BenchmarkRow(
            metric: "sonora convert to AAC ÷ ffmpeg", unit: "ratio", sonora: median(ratios), anchor: "ffmpeg -c:a aac", anchorValue: 1.0,
            better: .lower)
    }
}
