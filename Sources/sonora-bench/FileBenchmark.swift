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

        let cases = [
            Case(metric: "decode WAV 16-bit", sonora: { try decodeThroughSonora("in.wav") }, anchor: { anchorDecode("in.wav") }),
            Case(metric: "decode FLAC", sonora: { try decodeThroughSonora("in.flac") }, anchor: { anchorDecode("in.flac") }),
            Case(metric: "decode IMA4 (CAF; anchor: libsndfile IMA ADPCM WAV)", sonora: { try decodeThroughSonora("in.caf") }, anchor: { anchorDecode("ima.wav") }),
            Case(metric: "encode WAV 16-bit", sonora: { try encodeThroughSonora("out.wav", .wave, wavFormat) }, anchor: { anchorEncode("anchor.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16) }),
            Case(metric: "encode FLAC", sonora: { try encodeThroughSonora("out.flac", .flac, flacFormat) }, anchor: { anchorEncode("anchor.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16) }),
            Case(metric: "encode IMA4 (CAF; anchor: libsndfile IMA ADPCM WAV)", sonora: { try encodeThroughSonora("out.caf", .caf, imaFormat) }, anchor: { anchorEncode("anchor-ima.wav", SF_FORMAT_WAV | SF_FORMAT_IMA_ADPCM) }),
            Case(metric: "resample 44.1 → 48 kHz (libsoxr HQ)", sonora: resampleThroughSonora, anchor: resampleAnchor),
        ]
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
                    anchor: "libsndfile / libsoxr from C + 5 %", anchorValue: 1.05, better: .lower))
            let megabytes = Double(frames * channels * 4) / 1e6
            notes.append(String(format: "  %@: Sonora %.0f MB/s, C %.0f MB/s (float samples)", testCase.metric, megabytes / median(sonoraTimes), megabytes / median(anchorTimes)))
        }
        return (rows, notes)
    }
}
