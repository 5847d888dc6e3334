import CFFmpeg
import SonoraCore

/// Which libavcodec codec serves which Core Audio format, and the sample layouts Sonora
/// moves between libavcodec's frames and interleaved Float32.
enum FFmpegCodecs {
    /// The decoder for `format`: the float decoders where libavcodec has two (mp3float, not
    /// the fixed-point mp3), the same ones the `ffmpeg` command line picks first.
    static func decoderName(for format: AudioFormatID) -> String? {
        switch format {
        case .mpeg4AAC, .mpeg4AAC_HE: "aac"
        case .mpegLayer3: "mp3float"
        case .appleLossless: "alac"
        case .flac: "flac"
        case .opus: "opus"
        default: nil
        }
    }

    /// The encoder for `format`: libavcodec's own AAC, ALAC and FLAC; LAME for MP3 (libavcodec
    /// has no MP3 encoder) and libopus for Opus (the reference encoder).
    static func encoderName(for format: AudioFormatID) -> String? {
        switch format {
        case .mpeg4AAC: "aac"
        case .mpegLayer3: "libmp3lame"
        case .appleLossless: "alac"
        case .flac: "flac"
        case .opus: "libopus"
        default: nil
        }
    }

    /// Whether the converter can decode `format` through libavcodec.
    static func decodes(_ format: AudioFormatID) -> Bool { decoderName(for: format) != nil }

    /// Whether the converter can encode `format` through libavcodec.
    static func encodes(_ format: AudioFormatID) -> Bool { encoderName(for: format) != nil }

    /// A list libavcodec ends with a sentinel (sample rates end with 0, formats with NONE).
    static func list<T: Equatable>(_ pointer: UnsafePointer<T>?, end: T) -> [T] {
        guard var pointer else { return [] }
        var values: [T] = []
        while pointer.pointee != end {
            values.append(pointer.pointee)
            pointer += 1
        }
        return values
    }

    /// Appends `frame`'s samples to `output` as interleaved Float32, as libswresample's
    /// conversion does for `ffmpeg -f f32le` (integers scaled by 2^-15 / 2^-31, exact).
    static func appendInterleaved(_ frame: UnsafeMutablePointer<AVFrame>, to output: inout [Float]) throws(AudioError) {
        let frames = Int(frame.pointee.nb_samples)
        let channels = Int(frame.pointee.ch_layout.nb_channels)
        guard frames > 0, channels > 0, let planes = frame.pointee.extended_data else { return }
        let format = AVSampleFormat(rawValue: frame.pointee.format)
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: frames * channels))
        output.withUnsafeMutableBufferPointer { buffer in
            let out = buffer.baseAddress! + start
            func copy<S>(_ type: S.Type, planar: Bool, _ convert: (S) -> Float) {
                for channel in 0..<channels {
                    let base = UnsafeRawPointer(planes[planar ? channel : 0]!).assumingMemoryBound(to: S.self)
                    let step = planar ? 1 : channels
                    let offset = planar ? 0 : channel
                    for index in 0..<frames { out[index * channels + channel] = convert(base[index * step + offset]) }
                }
            }
            switch format {
            case AV_SAMPLE_FMT_FLTP: copy(Float.self, planar: true) { $0 }
            case AV_SAMPLE_FMT_FLT: copy(Float.self, planar: false) { $0 }
            case AV_SAMPLE_FMT_S16P: copy(Int16.self, planar: true) { Float($0) * (1 / 32768) }
            case AV_SAMPLE_FMT_S16: copy(Int16.self, planar: false) { Float($0) * (1 / 32768) }
            case AV_SAMPLE_FMT_S32P: copy(Int32.self, planar: true) { Float($0) * (1 / 2_147_483_648) }
            case AV_SAMPLE_FMT_S32: copy(Int32.self, planar: false) { Float($0) * (1 / 2_147_483_648) }
            case AV_SAMPLE_FMT_DBLP: copy(Double.self, planar: true) { Float($0) }
            case AV_SAMPLE_FMT_DBL: copy(Double.self, planar: false) { Float($0) }
            default: break
            }
        }
        switch format {
        case AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_FLT, AV_SAMPLE_FMT_S16P, AV_SAMPLE_FMT_S16,
             AV_SAMPLE_FMT_S32P, AV_SAMPLE_FMT_S32, AV_SAMPLE_FMT_DBLP, AV_SAMPLE_FMT_DBL:
            return
        default:
            output.removeLast(frames * channels)
            throw AudioError(.unsupportedDataFormat, "libavcodec decoded to sample format \(format.rawValue), which Sonora does not read")
        }
    }

    /// Appends `frame`'s samples to one array per channel (converted as `appendInterleaved`
    /// does). Planar float, what the AAC, MP3 and Opus decoders give, is a straight copy.
    static func appendChannels(_ frame: UnsafeMutablePointer<AVFrame>, to output: inout [[Float]]) throws(AudioError) {
        let frames = Int(frame.pointee.nb_samples)
        let channels = Int(frame.pointee.ch_layout.nb_channels)
        guard frames > 0, channels > 0, let planes = frame.pointee.extended_data else { return }
        if output.count != channels { output = Array(repeating: [], count: channels) }
        let format = AVSampleFormat(rawValue: frame.pointee.format)
        func append<S>(_ type: S.Type, planar: Bool, _ convert: (S) -> Float) {
            for channel in 0..<channels {
                let base = UnsafeRawPointer(planes[planar ? channel : 0]!).assumingMemoryBound(to: S.self)
                if planar, S.self == Float.self {
                    output[channel].append(contentsOf: UnsafeBufferPointer(start: UnsafeRawPointer(base).assumingMemoryBound(to: Float.self), count: frames))
                    continue
                }
                let step = planar ? 1 : channels
                let offset = planar ? 0 : channel
                let start = output[channel].count
                output[channel].append(contentsOf: repeatElement(0, count: frames))
                output[channel].withUnsafeMutableBufferPointer { out in
                    for index in 0..<frames { out[start + index] = convert(base[index * step + offset]) }
                }
            }
        }
        switch format {
        case AV_SAMPLE_FMT_FLTP: append(Float.self, planar: true) { $0 }
        case AV_SAMPLE_FMT_FLT: append(Float.self, planar: false) { $0 }
        case AV_SAMPLE_FMT_S16P: append(Int16.self, planar: true) { Float($0) * (1 / 32768) }
        case AV_SAMPLE_FMT_S16: append(Int16.self, planar: false) { Float($0) * (1 / 32768) }
        case AV_SAMPLE_FMT_S32P: append(Int32.self, planar: true) { Float($0) * (1 / 2_147_483_648) }
        case AV_SAMPLE_FMT_S32: append(Int32.self, planar: false) { Float($0) * (1 / 2_147_483_648) }
        case AV_SAMPLE_FMT_DBLP: append(Double.self, planar: true) { Float($0) }
        case AV_SAMPLE_FMT_DBL: append(Double.self, planar: false) { Float($0) }
        default:
            throw AudioError(.unsupportedDataFormat, "libavcodec decoded to sample format \(format.rawValue), which Sonora does not read")
        }
    }

    /// Writes `frames` interleaved Float32 frames into `frame` (allocated for them) in its sample format,
    /// rounding and clipping to integers as libswresample does (`lrintf`, saturating).
    static func fill(_ frame: UnsafeMutablePointer<AVFrame>, from input: UnsafePointer<Float>, frames: Int, channels: Int, bits: Int) {
        guard let planes = frame.pointee.extended_data else { return }
        let format = AVSampleFormat(rawValue: frame.pointee.format)
        func write<S>(_ type: S.Type, planar: Bool, _ convert: (Float) -> S) {
            for channel in 0..<channels {
                let base = UnsafeMutableRawPointer(planes[planar ? channel : 0]!).assumingMemoryBound(to: S.self)
                let step = planar ? 1 : channels
                let offset = planar ? 0 : channel
                for index in 0..<frames { base[index * step + offset] = convert(input[index * channels + channel]) }
            }
        }
        func integer(_ value: Float, scale: Float, bits: Int) -> Int32 {
            let limit = Float(1 << (bits - 1))
            let scaled = (value * scale).rounded(.toNearestOrEven)
            return Int32(min(max(scaled, -limit), limit - 1))
        }
        switch format {
        case AV_SAMPLE_FMT_FLTP: write(Float.self, planar: true) { $0 }
        case AV_SAMPLE_FMT_FLT: write(Float.self, planar: false) { $0 }
        case AV_SAMPLE_FMT_S16P: write(Int16.self, planar: true) { Int16(integer($0, scale: 32768, bits: 16)) }
        case AV_SAMPLE_FMT_S16: write(Int16.self, planar: false) { Int16(integer($0, scale: 32768, bits: 16)) }
        // 24-bit data in the top of 32-bit samples, as the ALAC and FLAC encoders take it.
        case AV_SAMPLE_FMT_S32P: write(Int32.self, planar: true) { integer($0, scale: 8_388_608, bits: bits) << 8 }
        case AV_SAMPLE_FMT_S32: write(Int32.self, planar: false) { integer($0, scale: 8_388_608, bits: bits) << 8 }
        default: break
        }
    }
}

extension AudioError {
    /// An FFmpeg error as a Core Audio status, its message naming what failed.
    static func ffmpeg(_ code: Int32, _ status: AudioError.Code, _ what: String) -> AudioError {
        AudioError(status, "\(what): \(FFmpegLibrary.message(code)) (libavcodec \(FFmpegLibrary.codecVersion))")
    }
}
