import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// What a reader does around a seek, and what a writer stores after the last packet.
@Suite("Codec reset and final cookie")
struct CodecResetTests {
    /// After `reset()` (a seek) decoding resumes from any packet as if the stream had been decoded
    /// through to it: ALAC packets stand alone, so packet 5 onwards equals the continuous decoding.
    @Test func resetLetsDecodingResumeAtAnotherPacket() throws {
        var format = StreamFormat.compressed(.appleLossless, sampleRate: 44100, channels: 2)
        format.formatFlags = AudioFormatFlags(rawValue: 1)
        let encoded = try CodecRoundTripTests.encode(CodecRoundTripTests.signal(frames: 40000, rate: 44100, bits: 16), to: format)
        let whole = try CodecRoundTripTests.decode(encoded.packets, from: format, cookie: encoded.cookie, prime: .init())
        let converter = try AudioConverter(from: format, to: .linearPCM(sampleRate: 44100, channels: 2, sample: .float32))
        converter.decompressionMagicCookie = encoded.cookie
        let (head, rest) = encoded.packets.split(at: 3)
        _ = try converter.convert(packets: head)
        converter.reset()
        let (_, fromFive) = rest.split(at: 2)
        let bytes = try converter.convert(packets: fromFive) + converter.flush()
        let resumed = bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let start = 5 * 4096 * 2
        #expect(resumed.count == whole.count - start)
        #expect(FFmpegReference.firstDifference(Array(whole[start...]), resumed, offset: 0) == nil)
    }

    /// FLAC's STREAMINFO is final once the stream is flushed: it carries the total sample count.
    @Test func flacCookieCarriesTheTotalAfterTheFlush() throws {
        let frames = 12345
        let encoded = try CodecRoundTripTests.encode(
            CodecRoundTripTests.signal(frames: frames, rate: 44100, bits: 16), to: .compressed(.flac, sampleRate: 44100, channels: 2))
        let info = try #require(encoded.cookie)
        try #require(info.count == 34)
        let total = Int(info[13] & 0x0F) << 32 | Int(info[14]) << 24 | Int(info[15]) << 16 | Int(info[16]) << 8 | Int(info[17])
        #expect(total == frames)
    }
}
