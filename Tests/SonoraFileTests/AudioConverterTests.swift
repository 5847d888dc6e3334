import Foundation
import SonoraCore
import SonoraFile
import Testing

@Suite("AudioConverter")
struct AudioConverterTests {
    /// Stereo int16 interleaved little-endian bytes of a known integer pattern.
    static func int16Pattern(frames: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        for frame in 0..<frames {
            for value in [Int16(truncatingIfNeeded: frame * 37 - 9000), Int16(truncatingIfNeeded: 20000 - frame * 11)] {
                withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
            }
        }
        return bytes
    }

    @Test func chainsOfPCMFormatsComeBackExactly() throws {
        let s16 = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        let chain: [StreamFormat] = [
            .linearPCM(sampleRate: 48000, channels: 2, sample: .float32, interleaved: false, bigEndian: true),
            .linearPCM(sampleRate: 48000, channels: 2, sample: .int24),
            .linearPCM(sampleRate: 48000, channels: 2, sample: .int24In32, interleaved: false),
            .linearPCM(sampleRate: 48000, channels: 2, sample: .int32, bigEndian: true),
            .linearPCM(sampleRate: 48000, channels: 2, sample: .float64),
            s16,
        ]
        let original = Self.int16Pattern(frames: 1000)
        var bytes = original
        var current = s16
        for next in chain {
            bytes = try AudioConverter(from: current, to: next).convert(bytes)
            #expect(bytes.count == 1000 * Int(next.bytesPerFrame) * (next.isInterleaved ? 1 : 2), "\(next)")
            current = next
        }
        #expect(bytes == original)
    }

    @Test func eightBitAndClippingFollowTheRules() throws {
        let float = StreamFormat.linearPCM(sampleRate: 8000, channels: 1, sample: .float32)
        var input: [UInt8] = []
        for value: Float in [0, 1, -1, 2, -2, 0.5] { withUnsafeBytes(of: value.bitPattern.littleEndian) { input += $0 } }
        let u8 = try AudioConverter(from: float, to: .linearPCM(sampleRate: 8000, channels: 1, sample: .uint8)).convert(input)
        #expect(u8 == [128, 255, 0, 255, 0, 192])
        let s16 = try AudioConverter(from: float, to: .linearPCM(sampleRate: 8000, channels: 1, sample: .int16, bigEndian: true)).convert(input)
        #expect(Array(s16[2..<4]) == [0x7F, 0xFF] && Array(s16[4..<6]) == [0x80, 0x00])
    }

    @Test func channelMapsAndMixes() throws {
        let stereo = StreamFormat.linearPCM(sampleRate: 8000, channels: 2, sample: .int16)
        let mono = StreamFormat.linearPCM(sampleRate: 8000, channels: 1, sample: .int16)
        let input = Self.int16Pattern(frames: 4)
        func samples(_ bytes: [UInt8]) -> [Int16] {
            stride(from: 0, to: bytes.count, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
        }
        let pattern = samples(input)
        let averaged = samples(try AudioConverter(from: stereo, to: mono).convert(input))
        var expected: [Int16] = []
        for frame in 0..<4 {
            let sum = Float(Int(pattern[frame * 2]) + Int(pattern[frame * 2 + 1]))
            expected.append(Int16((sum / 2).rounded(.toNearestOrEven)))
        }
        #expect(averaged == expected)
        let swapped = samples(try AudioConverter(from: stereo, to: stereo, channelMap: [1, 0]).convert(input))
        #expect(swapped[0] == pattern[1] && swapped[1] == pattern[0])
        let doubled = samples(try AudioConverter(from: mono, to: stereo).convert(Array(input[0..<8])))
        #expect(doubled[0] == doubled[1] && doubled[2] == doubled[3])
        #expect(throws: AudioError.self) { try AudioConverter(from: stereo, to: stereo, channelMap: [0, 2]) }
    }

    @Test func sampleRateConversionKeepsLengthAndPitch() throws {
        let source = StreamFormat.linearPCM(sampleRate: 44100, channels: 1, sample: .float32)
        let destination = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .float32)
        let converter = try AudioConverter(from: source, to: destination)
        var output: [UInt8] = []
        for block in 0..<10 {
            var bytes: [UInt8] = []
            for frame in 0..<4410 {
                let value = Float(0.5 * sin(2 * Double.pi * 1000 * Double(block * 4410 + frame) / 44100))
                withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes += $0 }
            }
            output += try converter.convert(bytes)
        }
        output += try converter.flush()
        let floats = output.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(abs(floats.count - 48000) <= 2, "\(floats.count) frames")
        let middle = floats[12000..<36000]
        let crossings = zip(middle, middle.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
        #expect(abs(Double(crossings) / 0.5 - 2000) < 5)
    }

    @Test func pcmToIMA4AndBack() throws {
        let pcm = StreamFormat.linearPCM(sampleRate: 44100, channels: 2, sample: .int16)
        let ima = StreamFormat.appleIMA4(sampleRate: 44100, channels: 2)
        var input: [UInt8] = []
        for frame in 0..<1000 {
            let t = Double(frame) / 44100
            for value in [Int16(12000 * sin(2 * .pi * 440 * t)), Int16(8000 * sin(2 * .pi * 900 * t))] {
                withUnsafeBytes(of: value.littleEndian) { input += $0 }
            }
        }
        let encoder = try AudioConverter(from: pcm, to: ima)
        let packets = try encoder.convert(input) + encoder.flush()
        #expect(packets.count == 16 * 68)  // ceil(1000 / 64) packets of 34 bytes per channel
        let decoded = try AudioConverter(from: ima, to: pcm).convert(packets)
        #expect(decoded.count == 1024 * 4)
        let original = input.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }.map { Float($0) }
        let back = decoded.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }.prefix(2000).map { Float($0) }
        var signal = 0.0
        var noise = 0.0
        for (a, b) in zip(original[128...], back[128...]) {
            signal += Double(a * a)
            noise += Double((a - b) * (a - b))
        }
        #expect(10 * log10(signal / noise) > 20)
        #expect(throws: AudioError.self) { try AudioConverter(from: ima, to: pcm).convert([1, 2, 3]) }
    }

    @Test func pullFormDeliversWhatTheBufferFormDoes() throws {
        let source = StreamFormat.linearPCM(sampleRate: 32000, channels: 1, sample: .int16)
        let destination = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .float32)
        let input = Self.int16Pattern(frames: 1600)  // 3200 mono frames of int16
        var offset = 0
        let pulled = try AudioConverter(from: source, to: destination).fill(frameCount: 1_000_000) {
            defer { offset += 640 }
            return offset < input.count ? Array(input[offset..<min(input.count, offset + 640)]) : []
        }
        let converter = try AudioConverter(from: source, to: destination)
        let whole = try converter.convert(input) + converter.flush()
        #expect(pulled == whole)
        #expect(abs(pulled.count / 4 - 4800) <= 2)
        #expect(throws: AudioError.self) { try AudioConverter(from: source, to: destination).convert([0, 0, 0]) }
        #expect(throws: AudioError.self) { try AudioConverter(from: .compressed(.vorbis, sampleRate: 44100, channels: 2), to: destination) }
    }
}
