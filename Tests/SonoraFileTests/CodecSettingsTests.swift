import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// The codec properties reach the encoders, and decoded PCM comes out in any PCM layout.
@Suite("Codec settings and PCM layouts")
struct CodecSettingsTests {
    static func encodedBytes(_ format: StreamFormat, configure: (AudioConverter) throws -> Void) throws -> [UInt8] {
        let channels = Int(format.channelsPerFrame)
        let source = StreamFormat.linearPCM(sampleRate: format.sampleRate, channels: channels, sample: .float32)
        let converter = try AudioConverter(from: source, to: format)
        try configure(converter)
        let input = CodecRoundTripTests.signal(frames: 20000, rate: format.sampleRate, bits: 16)
        var packets = try converter.convertToPackets(input.withUnsafeBytes { Array($0) })
        packets.append(contentsOf: try converter.flushPackets())
        return packets.data
    }

    @Test func qualityAndComplexityReachTheEncoder() throws {
        let mp3 = StreamFormat.compressed(.mpegLayer3, sampleRate: 44100, channels: 2)
        let fast = try Self.encodedBytes(mp3) { try $0.setQuality(0) }
        let best = try Self.encodedBytes(mp3) { try $0.setQuality(127) }
        #expect(fast != best)
        var flac = StreamFormat.compressed(.flac, sampleRate: 44100, channels: 2)
        flac.formatFlags = AudioFormatFlags(rawValue: 1)
        let quick = try Self.encodedBytes(flac) { try $0.setQuality(0) }
        let small = try Self.encodedBytes(flac) { try $0.setQuality(127) }
        #expect(small.count < quick.count, "level 12: \(small.count) bytes, level 0: \(quick.count)")
        let opus = StreamFormat.compressed(.opus, sampleRate: 48000, channels: 2)
        let simple = try Self.encodedBytes(opus) { try $0.setComplexity(0) }
        let complex = try Self.encodedBytes(opus) { try $0.setComplexity(10) }
        #expect(simple != complex)
    }

    /// The same AAC stream decoded to interleaved float, canonical (non-interleaved) float and int16.
    @Test func decodedPCMInEveryLayout() throws {
        let format = StreamFormat.compressed(.mpeg4AAC, sampleRate: 44100, channels: 2)
        let encoded = try CodecRoundTripTests.encode(CodecRoundTripTests.signal(frames: 8000, rate: 44100), to: format)
        func decode(_ destination: StreamFormat) throws -> [UInt8] {
            let converter = try AudioConverter(from: format, to: destination)
            converter.decompressionMagicCookie = encoded.cookie
            return try converter.convert(packets: encoded.packets) + converter.flush()
        }
        let interleaved = try decode(.linearPCM(sampleRate: 44100, channels: 2, sample: .float32)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let planar = try decode(.canonical(sampleRate: 44100, channels: 2)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let frames = interleaved.count / 2
        #expect(planar.count == interleaved.count)
        #expect((0..<frames).allSatisfy { planar[$0] == interleaved[2 * $0] && planar[frames + $0] == interleaved[2 * $0 + 1] })
        let int16 = try decode(.linearPCM(sampleRate: 44100, channels: 2, sample: .int16)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        #expect(int16.count == interleaved.count)
        #expect(zip(int16, interleaved).allSatisfy { abs(Float($0) / 32768 - max(-1, min(1, $1))) <= 1.0 / 32768 })
    }
}
