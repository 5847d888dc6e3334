import CFFmpeg
import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport

/// The reference side of the codec tests: files the `ffmpeg` command line makes, their packets
/// as libavformat demuxes them (no container code of Sonora's involved), and ffmpeg's own
/// decoding of them to float32.
enum FFmpegReference {
    struct Stream {
        var sampleRate: Int
        var channels: Int
        /// libavformat's codec configuration (ASC, `alac` atom, STREAMINFO, OpusHead); Sonora's
        /// decoders take each as a magic cookie too.
        var extradata: [UInt8]
        var packets: [[UInt8]]

        /// All packets, described.
        var converterPackets: AudioConverterPackets {
            var result = AudioConverterPackets()
            for packet in packets {
                result.descriptions.append(AudioStreamPacketDescription(startOffset: Int64(result.data.count), dataByteSize: UInt32(packet.count)))
                result.data += packet
            }
            return result
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs `ffmpeg` with `arguments` (quiet, overwriting only inside the test's folder).
    static func ffmpeg(_ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        process.arguments = ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "ffmpeg \(arguments.joined(separator: " ")): \(String(decoding: message, as: UTF8.self))")
        }
        return data
    }

    /// A 2-second test signal: a chirp on the left, noise on the right (both when mono).
    static func sourceArguments(rate: Int, channels: Int, seconds: Double = 2) -> [String] {
        let chirp = "0.4*sin(2*PI*(100+2000*t)*t)"
        let noise = "0.3*(random(0)-0.5)"
        let expression = channels == 1 ? "\(chirp)+\(noise)" : "\(chirp)|\(noise)"
        return ["-f", "lavfi", "-i", "aevalsrc=\(expression):s=\(rate):d=\(seconds)"]
    }

    /// ffmpeg's own decoding of `path` to interleaved float32 (priming and padding dropped as its demuxer says).
    static func decoded(_ path: String) throws -> [Float] {
        let data = try ffmpeg(["-i", path, "-f", "f32le", "-"])
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// The first audio stream of `path`, demuxed by libavformat.
    static func demux(_ path: String) throws -> Stream {
        var context: UnsafeMutablePointer<AVFormatContext>?
        guard avformat_open_input(&context, path, nil, nil) >= 0, let format = context else {
            throw Failure(description: "libavformat cannot open \(path)")
        }
        defer { avformat_close_input(&context) }
        guard avformat_find_stream_info(format, nil) >= 0 else { throw Failure(description: "no stream info in \(path)") }
        let index = av_find_best_stream(format, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        guard index >= 0, let parameters = format.pointee.streams[Int(index)]?.pointee.codecpar else {
            throw Failure(description: "no audio stream in \(path)")
        }
        var stream = Stream(
            sampleRate: Int(parameters.pointee.sample_rate), channels: Int(parameters.pointee.ch_layout.nb_channels),
            extradata: parameters.pointee.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(parameters.pointee.extradata_size))) } ?? [],
            packets: [])
        var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
        defer { av_packet_free(&packet) }
        while av_read_frame(format, packet) >= 0 {
            if packet!.pointee.stream_index == index {
                stream.packets.append(Array(UnsafeBufferPointer(start: packet!.pointee.data, count: Int(packet!.pointee.size))))
            }
            av_packet_unref(packet)
        }
        return stream
    }

    /// Sonora's decoding of a whole demuxed stream through the converter's input-callback form,
    /// nothing dropped (primeInfo left at 0): interleaved float32 at the stream's rate.
    static func sonoraDecoded(_ stream: Stream, formatID: AudioFormatID, primeInfo: AudioConverterPrimeInfo = .init()) throws -> [Float] {
        let source = StreamFormat.compressed(formatID, sampleRate: Double(stream.sampleRate), channels: stream.channels)
        let destination = StreamFormat.linearPCM(sampleRate: Double(stream.sampleRate), channels: stream.channels, sample: .float32)
        let converter = try AudioConverter(from: source, to: destination)
        converter.decompressionMagicCookie = stream.extradata.isEmpty ? nil : stream.extradata
        converter.primeInfo = primeInfo
        var next = 0
        var bytes: [UInt8] = []
        while true {
            let chunk = try converter.fill(frameCount: 4096) { count in
                var packets = AudioConverterPackets()
                for packet in stream.packets[next..<min(next + count, stream.packets.count)] {
                    packets.descriptions.append(AudioStreamPacketDescription(startOffset: Int64(packets.data.count), dataByteSize: UInt32(packet.count)))
                    packets.data += packet
                }
                next = min(next + count, stream.packets.count)
                return packets
            }
            if chunk.isEmpty { break }
            bytes += chunk
        }
        return bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// Where `reference` starts inside `decoded`: the offset (up to `limit` frames) at which the first
    /// 256 frames match bit for bit, or nil.
    static func alignment(of reference: [Float], in decoded: [Float], channels: Int, limit: Int = 4096) -> Int? {
        let window = min(256 * channels, reference.count)
        for offset in 0...limit where (offset * channels + window) <= decoded.count {
            var same = true
            for index in 0..<window where decoded[offset * channels + index].bitPattern != reference[index].bitPattern {
                same = false
                break
            }
            if same { return offset }
        }
        return nil
    }

    /// The index of the first sample that differs bitwise from `reference` after `offset` frames, or nil.
    static func firstDifference(_ reference: [Float], _ decoded: [Float], offset: Int) -> Int? {
        guard decoded.count >= offset + reference.count else { return min(reference.count, max(decoded.count - offset, 0)) }
        for index in reference.indices where decoded[offset + index].bitPattern != reference[index].bitPattern { return index }
        return nil
    }
}
