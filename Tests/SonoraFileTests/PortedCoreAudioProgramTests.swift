import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// The "done when": a Core Audio program that reads M4A/MP3/CAF-ALAC packet by packet,
/// streams an MP3 through AudioFileStream into a converter, and writes AAC into CAF and M4A —
/// written with Core Audio's concepts (AudioFileOpenURL, ReadPacketData, the magic cookie,
/// AudioConverterFillComplexBuffer, AudioFileStreamParseBytes, AudioFileWritePackets, the
/// packet table) and nothing else. This file imports SonoraCore and SonoraFile only.
@Suite("A ported Core Audio program", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg"), "ffmpeg is not installed"))
struct PortedCoreAudioProgramTests {
    static let pcm = StreamFormat.linearPCM(sampleRate: 44100, channels: 2, sample: .float32, interleaved: true)

    /// AudioFileOpenURL + ReadPacketData in a loop, each batch through AudioConverterFillComplexBuffer.
    static func decodePacketByPacket(_ path: String) throws -> [Float] {
        let file = try AudioFile.open(path)
        let converter = try AudioConverter(from: file.dataFormat, to: pcm)
        if let cookie = file.magicCookie { converter.decompressionMagicCookie = cookie }
        if let table = file.packetTableInfo {
            converter.primeInfo = AudioConverterPrimeInfo(leadingFrames: Int(table.primingFrames), trailingFrames: Int(table.remainderFrames))
        }
        var nextPacket = 0
        let packetCount = try #require(file.packetCount)
        var output: [UInt8] = []
        while true {
            let bytes = try converter.fill(frameCount: 4096) { wanted in
                guard nextPacket < packetCount else { return AudioConverterPackets() }
                let read = try file.readPacketData(from: nextPacket, count: wanted, maximumBytes: 64 * 1024)
                nextPacket += read.packetCount
                return AudioConverterPackets(data: read.bytes, descriptions: read.descriptions ?? [])
            }
            if bytes.isEmpty { break }
            output += bytes
        }
        return output.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    @Test(arguments: [("m4a", ["-c:a", "aac", "-b:a", "128k"]), ("mp3", ["-c:a", "libmp3lame", "-b:a", "160k"]), ("caf", ["-c:a", "alac"])])
    func readsPacketByPacketAndDecodesAsFFmpegDoes(_ container: String, _ codec: [String]) throws {
        try withTemporaryFolder { folder in
            let path = folder.path("in.\(container)")
            _ = try FFmpegReference.ffmpeg(FFmpegReference.sourceArguments(rate: 44100, channels: 2) + codec + [path])
            let decoded = try Self.decodePacketByPacket(path)
            let reference = try FFmpegReference.decoded(path)
            #expect(decoded.count >= 2 * 88200)
            let compared = min(decoded.count, reference.count, 2 * 88200)
            #expect(Array(decoded.prefix(compared)) == Array(reference.prefix(compared)), "\(container): decoded differs from ffmpeg's")
        }
    }

    @Test func streamsAnMP3ThroughAudioFileStreamIntoAConverterAndWritesAACToCAFAndM4A() throws {
        try withTemporaryFolder { folder in
            let mp3 = folder.path("radio.mp3")
            _ = try FFmpegReference.ffmpeg(FFmpegReference.sourceArguments(rate: 44100, channels: 2) + ["-c:a", "libmp3lame", "-b:a", "128k", mp3])
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: mp3)))

            // The network side: pieces of any size into AudioFileStream; packets into a converter.
            var format: StreamFormat?
            var converter: AudioConverter?
            var pcmBytes: [UInt8] = []
            var conversionError: Error?
            let stream = AudioFileStream(
                propertyListener: { property in
                    if case .dataFormat(let found) = property { format = found }
                    if case .readyToProducePackets = property, let format {
                        do { converter = try AudioConverter(from: format, to: Self.pcm) } catch { conversionError = error }
                    }
                },
                packetsHandler: { data, descriptions in
                    guard let converter else { return }
                    let packets = AudioConverterPackets(data: Array(data), descriptions: descriptions ?? [])
                    do { pcmBytes += try converter.convert(packets: packets) } catch { conversionError = error }
                })
            var generator = SeededGenerator(seed: 16)
            var at = 0
            while at < bytes.count {
                let piece = min(Int.random(in: 1...3000, using: &generator), bytes.count - at)
                try stream.parse(Array(bytes[at..<at + piece]))
                at += piece
            }
            if conversionError != nil { throw conversionError! }
            #expect(format?.formatID == .mpegLayer3)
            let decoded = pcmBytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            #expect(decoded.count / 2 > 80000, "\(decoded.count / 2) frames from the stream")

            // The encoding side: PCM into AAC packets, AudioFileWritePackets with the cookie and packet table.
            let aac = StreamFormat.compressed(.mpeg4AAC, sampleRate: 44100, channels: 2)
            for (name, type) in [("out.caf", AudioFileType.caf), ("out.m4a", .m4a)] {
                let encoder = try AudioConverter(from: Self.pcm, to: aac)
                try encoder.setBitRate(128_000)
                var packets = try encoder.convertToPackets(pcmBytes)
                packets.append(contentsOf: try encoder.flushPackets())
                let file = try AudioFile.create(folder.path(name), type: type, format: aac, magicCookie: encoder.compressionMagicCookie)
                let priming = encoder.primeInfo.leadingFrames
                let total = packets.count * 1024
                try file.setPacketTableInfo(AudioFilePacketTableInfo(
                    validFrames: Int64(decoded.count / 2), primingFrames: Int32(priming), remainderFrames: Int32(total - priming - decoded.count / 2)))
                try file.writePackets(packets.data, descriptions: packets.descriptions)
                try file.close()

                let reopened = try AudioFile.open(folder.path(name))
                #expect(reopened.dataFormat.formatID == .mpeg4AAC)
                #expect(reopened.packetCount == packets.count)
                #expect(reopened.frameCount == decoded.count / 2, "\(name)")
                #expect(reopened.packetTableInfo?.primingFrames == Int32(priming))
                // And ffmpeg reads what was written.
                let check = try FFmpegReference.decoded(folder.path(name))
                #expect(check.count >= decoded.count - 2 * 1024, "\(name): ffmpeg decoded \(check.count / 2) frames")
            }
        }
    }
}
