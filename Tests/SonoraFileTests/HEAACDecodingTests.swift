import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// HE-AAC ('aach'): Debian's FFmpeg has no HE-AAC encoder, so the stream here is Sonora's AAC-LC
/// at 22.05 kHz behind an AudioSpecificConfig that signals SBR explicitly (object type 5, core
/// 22050 Hz, extension 44100 Hz). libavcodec then decodes at 44.1 kHz, 2048 frames per packet,
/// and the converter must take the rate the decoder reports, not the format's core rate.
@Suite("HE-AAC decoding")
struct HEAACDecodingTests {
    /// SBR (5), core rate index 7 (22050), 2 channels, extension index 4 (44100), then AAC-LC (2) and its GASpecificConfig.
    static let explicitSBRConfig: [UInt8] = [0x2B, 0x92, 0x08, 0x00]

    static func lcPackets(frames: Int) throws -> AudioConverterPackets {
        var input = [Float](repeating: 0, count: frames * 2)
        for frame in 0..<frames {
            let value = Float(0.5 * sin(2 * Double.pi * 1000 * Double(frame) / 22050))
            input[2 * frame] = value
            input[2 * frame + 1] = value
        }
        return try CodecRoundTripTests.encode(input, to: .compressed(.mpeg4AAC, sampleRate: 22050, channels: 2)).packets
    }

    /// Rising zero crossings per second of the left channel.
    static func frequency(_ interleaved: [Float], rate: Double, skip: Int) -> Double {
        let left = stride(from: 2 * skip, to: interleaved.count, by: 2).map { interleaved[$0] }
        let crossings = zip(left, left.dropFirst()).filter { $0 < 0 && $1 >= 0 }.count
        return Double(crossings) * rate / Double(left.count)
    }

    @Test(arguments: [44100.0, 48000.0])
    func decodesAtTheRateTheDecoderReports(_ rate: Double) throws {
        let packets = try Self.lcPackets(frames: 22050)
        let source = StreamFormat.compressed(.mpeg4AAC_HE, sampleRate: 22050, channels: 2)
        let converter = try AudioConverter(from: source, to: .linearPCM(sampleRate: rate, channels: 2, sample: .float32))
        converter.decompressionMagicCookie = Self.explicitSBRConfig
        let bytes = try converter.convert(packets: packets) + converter.flush()
        let output = bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let expected = Double(packets.count * 2048) * rate / 44100
        #expect(abs(Double(output.count / 2) - expected) <= 2, "\(output.count / 2) frames for \(packets.count) packets")
        let measured = Self.frequency(output, rate: rate, skip: 4096)
        #expect(abs(measured - 1000) < 10, "a 1 kHz tone came out at \(measured) Hz")
    }
}
