import Foundation
import SonoraCore
import SonoraFile

#if canImport(Glibc)
import Glibc
#endif

/// A mono signal file for `sonora voice process`: headerless little-endian float32 or
/// int16 (the aec-eval contract), or WAV (any PCM libsndfile reads) chosen by extension.
enum VoiceSignalFile {
    enum SampleFormat: String, CaseIterable {
        case f32, s16
    }

    static func isWAV(_ path: String) -> Bool { (path as NSString).pathExtension.lowercased() == "wav" }

    /// Reads `path` as mono samples at `rate`. Errors name the file and the problem.
    static func read(_ path: String, format: SampleFormat, rate: Double) throws -> [Float] {
        try readWithSampleType(path, format: format, rate: rate).samples
    }

    /// Reads `path` as mono samples at `rate`, with the WAV's sample type (nil for raw files).
    static func readWithSampleType(_ path: String, format: SampleFormat, rate: Double) throws -> (samples: [Float], sample: PCMSample?) {
        if isWAV(path) {
            let file = try AudioFile.open(path)
            defer { try? file.close() }
            let data = file.dataFormat
            guard data.channelsPerFrame == 1 else {
                throw CLIError("\(path): \(data.channelsPerFrame) channels; the echo canceller takes mono files")
            }
            guard data.sampleRate == rate else {
                throw CLIError("\(path): sample rate \(Int(data.sampleRate)) Hz, but --rate is \(Int(rate)) Hz")
            }
            var samples = [Float](repeating: 0, count: file.frameCount)
            guard !samples.isEmpty else { return ([], data.pcmSample) }
            let read = try samples.withUnsafeMutableBufferPointer { buffer in
                try withMonoList(buffer) { try file.readFrames(into: $0, from: 0) }
            }
            return (Array(samples.prefix(read)), data.pcmSample)
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError("\(path): cannot be read (missing or not a file)")
        }
        let width = format == .f32 ? 4 : 2
        guard data.count % width == 0 else {
            throw CLIError("\(path): \(data.count) bytes is not a whole number of \(format.rawValue) samples (\(width) bytes each)")
        }
        let count = data.count / width
        var samples = [Float](repeating: 0, count: count)
        data.withUnsafeBytes { raw in
            for index in 0..<count {
                if format == .f32 {
                    let bits = raw.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self)
                    samples[index] = Float(bitPattern: UInt32(littleEndian: bits))
                } else {
                    let bits = raw.loadUnaligned(fromByteOffset: index * 2, as: UInt16.self)
                    samples[index] = Float(Int16(bitPattern: UInt16(littleEndian: bits))) / 32768
                }
            }
        }
        if format == .f32, let bad = samples.firstIndex(where: { !$0.isFinite }) {
            throw CLIError("\(path): sample \(bad) is not a finite number (is the file float32 little-endian?)")
        }
        return (samples, nil)
    }

    /// Writes `samples` to `path` in `format` (a WAV by extension, as `wavSample`), through a
    /// hidden temporary file so a failure leaves nothing half-written. The caller has
    /// checked that `path` may be written (OutputFile).
    static func write(_ samples: [Float], to path: String, format: SampleFormat, wavSample: PCMSample, rate: Double) throws {
        if isWAV(path) {
            // AudioFile writes through its own hidden partial and renames it into place.
            let file = try AudioFile.create(path, type: .wave, format: .linearPCM(sampleRate: rate, channels: 1, sample: wavSample), erase: true)
            do {
                var copy = samples
                if !copy.isEmpty {
                    try copy.withUnsafeMutableBufferPointer { buffer in
                        try withMonoList(buffer) { try file.writeFrames(from: $0) }
                    }
                }
                try file.close()
            } catch {
                file.abandon()
                throw error
            }
        } else {
            let temporary = AudioFile.partialPath(for: path)
            var data = Data(capacity: samples.count * (format == .f32 ? 4 : 2))
            for value in samples {
                if format == .f32 {
                    withUnsafeBytes(of: value.bitPattern.littleEndian) { data.append(contentsOf: $0) }
                } else {
                    let scaled = (value * 32768).rounded()
                    let clipped = Int16(max(-32768, min(32767, scaled)))
                    withUnsafeBytes(of: clipped.littleEndian) { data.append(contentsOf: $0) }
                }
            }
            guard FileManager.default.createFile(atPath: temporary, contents: data) else {
                throw CLIError("\(path): cannot be written")
            }
            // rename(2) replaces the old file in one step (the caller allowed it).
            guard rename(temporary, path) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(temporary)
                throw CLIError("\(path): cannot be written (\(reason))")
            }
        }
    }

    /// A one-channel buffer list over `buffer` for the duration of `body`.
    private static func withMonoList<R>(_ buffer: UnsafeMutableBufferPointer<Float>, _ body: (AudioBufferList) throws -> R) throws -> R {
        let channels = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 1)
        defer { channels.deallocate() }
        channels.initialize(to: buffer.baseAddress!)
        return try body(AudioBufferList(channels: channels, channelCount: 1, frameCount: buffer.count))
    }
}
