import Foundation
import SonoraCore
@testable import SonoraFile
import SonoraTestSupport
import Testing

/// IMA4 and the libavcodec codecs behind the one packet-decoding interface.
@Suite("PacketDecoding")
struct PacketDecodingTests {
    @Test func ima4DecodesAsTheConverterDoes() throws {
        let format = StreamFormat.appleIMA4(sampleRate: 44100, channels: 2)
        let pcm = StreamFormat.linearPCM(sampleRate: 44100, channels: 2, sample: .float32)
        let input = CodecRoundTripTests.signal(frames: 640, rate: 44100)
        let encoder = try AudioConverter(from: pcm, to: format)
        let packets = try encoder.convert(input.withUnsafeBytes { Array($0) }) + encoder.flush()
        let expected = try AudioConverter(from: format, to: pcm).convert(packets).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let decoder = try makePacketDecoder(format: format, magicCookie: nil)
        #expect(decoder.outputFormat == pcm)
        var output: [Float] = []
        for start in stride(from: 0, to: packets.count, by: 68) {
            let frames = try packets[start..<start + 68].withUnsafeBytes { try decoder.decode($0, into: &output) }
            #expect(frames == 64)
        }
        #expect(output.map(\.bitPattern) == expected.map(\.bitPattern))
        #expect(throws: AudioError.self) { try [UInt8](repeating: 0, count: 67).withUnsafeBytes { try decoder.decode($0, into: &output) } }
    }

    @Test func compressedFormatsGetTheLibavcodecDecoder() throws {
        let decoder = try makePacketDecoder(format: .compressed(.mpegLayer3, sampleRate: 44100, channels: 2), magicCookie: nil)
        #expect(decoder is CodecDecoder)
    }
}
