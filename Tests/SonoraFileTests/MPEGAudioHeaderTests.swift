import SonoraCore
import SonoraFile
import Testing

/// MPEG audio headers of every version and layer, checked against the frame lengths of
/// ISO/IEC 11172-3 / 13818-3 (layer I: (12 × bit rate ÷ rate + padding) × 4 bytes; layer II
/// and MPEG-1 layer III: 144 × bit rate ÷ rate + padding; MPEG-2/2.5 layer III: 72 × …).
/// ffmpeg has no layer I encoder, so these streams are built here, frame by frame.
@Suite("MPEG audio frame headers")
struct MPEGAudioHeaderTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var versionBits: UInt8  // 3 MPEG-1, 2 MPEG-2, 0 MPEG-2.5
        var layer: Int
        var bitRateIndex: UInt8
        var rateIndex: UInt8
        var bitRate: Int
        var sampleRate: Int
        var framesPerPacket: UInt32
        var formatID: String
        var testDescription: String { "\(formatID) \(bitRate / 1000) kbit/s at \(sampleRate) Hz" }

        func length(padded: Bool) -> Int {
            let pad = padded ? 1 : 0
            switch layer {
            case 1: return (12 * bitRate / sampleRate + pad) * 4
            case 2: return 144 * bitRate / sampleRate + pad
            default: return (versionBits == 3 ? 144 : 72) * bitRate / sampleRate + pad
            }
        }

        func frame(padded: Bool, mono: Bool) -> [UInt8] {
            let header: [UInt8] = [0xFF, 0xE0 | versionBits << 3 | UInt8(4 - layer) << 1 | 1,
                                   bitRateIndex << 4 | rateIndex << 2 | (padded ? 2 : 0), mono ? 0xC0 : 0x00]
            return header + [UInt8](repeating: 0x11, count: length(padded: padded) - 4)
        }
    }

    static let cases: [Case] = [
        Case(versionBits: 3, layer: 1, bitRateIndex: 14, rateIndex: 0, bitRate: 448_000, sampleRate: 44100, framesPerPacket: 384, formatID: ".mp1"),
        Case(versionBits: 3, layer: 1, bitRateIndex: 1, rateIndex: 2, bitRate: 32_000, sampleRate: 32000, framesPerPacket: 384, formatID: ".mp1"),
        Case(versionBits: 2, layer: 1, bitRateIndex: 5, rateIndex: 0, bitRate: 80_000, sampleRate: 22050, framesPerPacket: 384, formatID: ".mp1"),
        Case(versionBits: 3, layer: 2, bitRateIndex: 10, rateIndex: 1, bitRate: 192_000, sampleRate: 48000, framesPerPacket: 1152, formatID: ".mp2"),
        Case(versionBits: 3, layer: 2, bitRateIndex: 14, rateIndex: 2, bitRate: 384_000, sampleRate: 32000, framesPerPacket: 1152, formatID: ".mp2"),
        Case(versionBits: 2, layer: 2, bitRateIndex: 8, rateIndex: 1, bitRate: 64_000, sampleRate: 24000, framesPerPacket: 1152, formatID: ".mp2"),
        Case(versionBits: 3, layer: 3, bitRateIndex: 14, rateIndex: 2, bitRate: 320_000, sampleRate: 32000, framesPerPacket: 1152, formatID: ".mp3"),
        Case(versionBits: 2, layer: 3, bitRateIndex: 14, rateIndex: 2, bitRate: 160_000, sampleRate: 16000, framesPerPacket: 576, formatID: ".mp3"),
        Case(versionBits: 0, layer: 3, bitRateIndex: 8, rateIndex: 1, bitRate: 64_000, sampleRate: 12000, framesPerPacket: 576, formatID: ".mp3"),
        Case(versionBits: 0, layer: 3, bitRateIndex: 1, rateIndex: 2, bitRate: 8_000, sampleRate: 8000, framesPerPacket: 576, formatID: ".mp3"),
    ]

    @Test(arguments: cases)
    func framesOfEveryVersionAndLayerHaveTheirSpecifiedLengths(_ header: Case) throws {
        for mono in [false, true] {
            let frames = (0..<20).map { header.frame(padded: $0 % 3 == 1, mono: mono) }
            let parsed = parseCompressed(frames.flatMap { $0 }) { 37 }
            #expect(parsed.error == nil, "\(parsed.errorMessage ?? "")")
            #expect(parsed.packets == frames)
            let format = try #require(parsed.dataFormat)
            #expect(format.formatID == AudioFormatID(rawValue: FourCharCode(stringLiteral: header.formatID)))
            #expect(format.sampleRate == Double(header.sampleRate) && format.framesPerPacket == header.framesPerPacket)
            #expect(format.channelsPerFrame == (mono ? 1 : 2))
            #expect(parsed.properties.contains(.bitRate(header.bitRate)))
        }
    }

    /// Reserved values (version 01, layer 00, rate 11, bit-rate index 1111) and free format (0000) are not frames.
    @Test func reservedAndFreeFormatHeadersAreJunk() {
        let good = MPEGAudioHeaderTests.cases[6]
        let valid = good.frame(padded: false, mono: false)
        for (byte, mask, value) in [(1, 0x18 as UInt8, 0x08 as UInt8), (1, 0x06, 0x00), (2, 0x0C, 0x0C), (2, 0xF0, 0xF0), (2, 0xF0, 0x00)] {
            var frame = valid
            frame[byte] = frame[byte] & ~mask | value
            let parsed = parseCompressed([UInt8](repeating: 0, count: 4) + Array(repeating: frame, count: 6).flatMap { $0 }, hint: .mp3)
            #expect(parsed.packets.isEmpty, "byte \(byte) = \(String(frame[byte], radix: 16)) made a frame")
        }
    }
}
