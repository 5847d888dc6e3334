import SonoraCore
import SonoraDSP
import SonoraFile
import SonoraUnits
import Testing

/// The converters with an 8.24 side (the iPhone's canonical audio-unit format).
@Suite("Converters with 8.24")
struct FixedPoint824ConverterTests {
    /// 8.24 words per channel: channel c, frame n → (n·2 + c) · 2^8 − 2^22, so ±0.25 and all distinct.
    static func word(frame: Int, channel: Int) -> Int32 { Int32((frame * 2 + channel) * 256 - 0x40_0000) }

    /// Fills non-interleaved 8.24 buffers with `word(frame:channel:)`.
    final class FixedRamp: PCMInputProvider {
        var next = 0
        override func fill(_ list: PCMBufferList, sampleTime: Double) -> AudioError.Code {
            for channel in 0..<Int(list.format.channelsPerFrame) {
                for frame in 0..<list.frameCount {
                    let word = UInt32(bitPattern: FixedPoint824ConverterTests.word(frame: next + frame, channel: channel))
                    list.buffers[channel].storeBytes(of: word.littleEndian, toByteOffset: frame * 4, as: UInt32.self)
                }
            }
            next += list.frameCount
            return .noError
        }
    }

    @Test func theConverterUnitReadsAnd824InputAndWritesAn824Output() throws {
        let converter = ConverterUnit()
        converter.inputProvider = FixedRamp()
        try converter.setStreamFormat(.audioUnitCanonical8_24(sampleRate: 44100, channels: 2), scope: .input, element: 0)
        try converter.setStreamFormat(.canonical(sampleRate: 44100, channels: 2), scope: .output, element: 0)
        try converter.initialize()
        let out = try renderFrames(converter, frames: 512)
        for frame in [0, 1, 300, 511] {
            for channel in 0..<2 {
                #expect(out[channel][frame] == Float(Self.word(frame: frame, channel: channel)) * 0x1p-24)
            }
        }
        // And back out to 8.24 at the output edge, bit for bit.
        let pcm = try OwnedPCMBufferList(format: .audioUnitCanonical8_24(sampleRate: 44100, channels: 2), frameCapacity: 256)
        #expect(converter.renderPCM(into: pcm.list(frameCount: 256), frameCount: 256, timeStamp: AudioTimeStamp(sampleTime: 512)) == .noError)
        for channel in 0..<2 {
            let words = (0..<256).map { Int32(bitPattern: UInt32(littleEndian: pcm.bytes(channel).load(fromByteOffset: $0 * 4, as: UInt32.self))) }
            #expect(words == (512..<768).map { Self.word(frame: $0, channel: channel) })
        }
    }

    @Test func audioConverterGoesBetween824AndInt16Exactly() throws {
        let fixed = StreamFormat.audioUnitCanonical8_24(sampleRate: 44100, channels: 2)
        let int16 = StreamFormat.linearPCM(sampleRate: 44100, channels: 2, sample: .int16)
        // int16 n is n · 2^-15, 8.24 n · 2^9: every int16 value is an exact 8.24 word.
        var bytes: [UInt8] = []
        let values: [Int16] = [0, 1, -1, 16384, -16384, .max, .min, 12345]
        for value in values { for _ in 0..<2 { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } } }
        let words = try AudioConverter(from: int16, to: fixed).convert(bytes)
        #expect(words.count == values.count * 2 * 4)
        let left = (0..<values.count).map { index in
            Int32(bitPattern: UInt32(words[index * 4]) | UInt32(words[index * 4 + 1]) << 8 | UInt32(words[index * 4 + 2]) << 16 | UInt32(words[index * 4 + 3]) << 24)
        }
        #expect(left == values.map { Int32($0) << 9 })
        #expect(left[3] == 0x0080_0000)  // 0.5
        #expect(try AudioConverter(from: fixed, to: int16).convert(words) == bytes)
        // 8.24 to float at another rate takes the resampler path too.
        let float48 = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .float32)
        let resampled = try AudioConverter(from: fixed, to: float48)
        let out = try resampled.convert(words) + resampled.flush()
        #expect(!out.isEmpty)
    }

    @Test func audioConverterRefusesFixedPointItDoesNotConvert() {
        var sixteenSixteen = StreamFormat.audioUnitCanonical8_24(sampleRate: 44100, channels: 2)
        sixteenSixteen.sampleFractionBits = 16
        let error = #expect(throws: AudioError.self) {
            try AudioConverter(from: sixteenSixteen, to: .canonical(sampleRate: 44100, channels: 2))
        }
        #expect(error?.code == .unsupportedDataFormat)
    }
}
