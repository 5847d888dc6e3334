import SonoraCore
import SonoraDSP
import Testing

/// 8.24 fixed point, the iPhone's canonical audio-unit sample: signed 32-bit, 24 fraction bits.
@Suite("8.24 fixed point")
struct FixedPoint824Tests {
    static let canonical = StreamFormat.audioUnitCanonical8_24(sampleRate: 44100, channels: 2)

    @Test func theCanonicalFormatIsCoreAudiosFieldForField() throws {
        let format = Self.canonical
        // kAudioFormatFlagIsSignedInteger | IsPacked | IsNonInterleaved | (24 << kLinearPCMFormatFlagsSampleFractionShift)
        #expect(format.formatFlags.rawValue == 0x4 | 0x8 | 0x20 | (24 << 7))
        #expect(format.formatFlags == .audioUnitCanonical8_24)
        #expect(format.bitsPerChannel == 32 && format.bytesPerFrame == 4 && format.bytesPerPacket == 4)
        #expect(format.channelsPerFrame == 2 && !format.isInterleaved)
        #expect(format.sampleFractionBits == 24)
        #expect(format.pcmSample == .fixed8_24)
        try format.validate()
        // Without the fraction bits the same word is a plain int32, and the other way round.
        var plain = format
        plain.sampleFractionBits = 0
        #expect(plain.pcmSample == .int32)
        #expect(StreamFormat.linearPCM(sampleRate: 44100, channels: 1, sample: .int32).sampleFractionBits == 0)
        // Fraction bits Sonora does not convert (16.16) are no sample it claims to read.
        var sixteen = format
        sixteen.sampleFractionBits = 16
        #expect(sixteen.pcmSample == nil)
    }

    @Test func validationRefusesFractionBitsThatCannotBe() {
        var float = StreamFormat.canonical(sampleRate: 48000, channels: 1)
        float.sampleFractionBits = 24
        #expect(float.validationProblems.contains { $0.contains("no fraction bits") })
        var tooMany = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .int16)
        tooMany.sampleFractionBits = 16
        #expect(tooMany.validationProblems.contains { $0.contains("leave no integer bits") })
        let error = #expect(throws: AudioError.self) { try tooMany.validate() }
        #expect(error?.code == .unsupportedDataFormat)
    }

    @Test func describesAndParsesAsCAStreamBasicDescriptionDoes() throws {
        #expect(Self.canonical.description == "LEI8.24@44100x2 deinterleaved")
        #expect(try StreamFormat(parsing: "LEI8.24@44100x2 deinterleaved") == Self.canonical)
        let interleaved = try StreamFormat(parsing: "BEI8.24@48000x2")
        #expect(interleaved.pcmSample == .fixed8_24 && interleaved.isBigEndian && interleaved.bytesPerFrame == 8)
        #expect(try StreamFormat(parsing: interleaved.description) == interleaved)
        for bad in ["LEF8.24@48000", "LEI8.@48000", "LEI.24@48000", "LEI8.0@48000", "LEI8.x@48000"] {
            let error = #expect(throws: AudioError.self, "\(bad)") { try StreamFormat(parsing: bad) }
            #expect(error?.code == .unsupportedDataFormat)
        }
    }

    static func decode(_ words: [Int32], bigEndian: Bool = false) -> [Float] {
        let raw = words.map { bigEndian ? UInt32(bitPattern: $0).bigEndian : UInt32(bitPattern: $0).littleEndian }
        var out = [Float](repeating: .nan, count: words.count)
        raw.withUnsafeBytes { bytes in
            out.withUnsafeMutableBufferPointer {
                SampleConversion.decode(bytes.baseAddress!, sample: .fixed8_24, bigEndian: bigEndian, stride: 4, into: $0.baseAddress!, count: words.count)
            }
        }
        return out
    }

    static func encode(_ samples: [Float], bigEndian: Bool = false) -> [Int32] {
        var raw = [UInt32](repeating: 0xDEAD_BEEF, count: samples.count)
        raw.withUnsafeMutableBytes { bytes in
            samples.withUnsafeBufferPointer {
                SampleConversion.encode($0.baseAddress!, count: samples.count, into: bytes.baseAddress!, sample: .fixed8_24, bigEndian: bigEndian, stride: 4)
            }
        }
        return raw.map { Int32(bitPattern: bigEndian ? UInt32(bigEndian: $0) : UInt32(littleEndian: $0)) }
    }

    @Test(arguments: [false, true])
    func convertsExactlyBothWays(bigEndian: Bool) {
        let pairs: [(Float, Int32)] = [
            (0.5, 0x0080_0000), (1, 0x0100_0000), (-1, -0x0100_0000), (-0.5, -0x0080_0000), (0, 0),
            (0x1p-24, 1), (-0x1p-24, -1), (2, 0x0200_0000), (-128, Int32.min), (127.5, 0x7F80_0000),
            (0.25 + 0x1p-24, 0x0040_0001),
        ]
        #expect(Self.decode(pairs.map(\.1), bigEndian: bigEndian) == pairs.map(\.0))
        #expect(Self.encode(pairs.map(\.0), bigEndian: bigEndian) == pairs.map(\.1))
    }

    @Test func clipsAtTheFixedPointRangeNotAtOne() {
        // ±1 are not limits (8 integer bits of headroom); ±128 are, as in Core Audio.
        #expect(Self.encode([1.5, -1.5, 128, 1000, -129, -1000, .infinity, -.infinity, .nan])
            == [0x0180_0000, -0x0180_0000, Int32.max, Int32.max, Int32.min, Int32.min, Int32.max, Int32.min, 0])
        // Half a step rounds to even, as every integer encoding does.
        #expect(Self.encode([0x1p-25, 3 * 0x1p-25]) == [0, 2])
    }

    @Test func everyValueInTheUnitRangeRoundTrips() {
        // All 8.24 values within ±1 are Floats, so word → Float → word is the identity there.
        var generator = 0x2545_F491_4F6C_DD1D as UInt64
        var words: [Int32] = [0x00FF_FFFF, -0x0100_0000, 0x0100_0000, 1, -1]
        for _ in 0..<100_000 {
            generator = generator &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let magnitude = Int32(truncatingIfNeeded: generator >> 33) % 0x0100_0001
            words.append(generator & 1 == 0 ? magnitude : -magnitude)
        }
        #expect(Self.encode(Self.decode(words)) == words)
        // And Float → 8.24 → Float for floats on the 2^-24 grid, up to the edges of the range.
        let floats: [Float] = words.map { Float($0) * 0x1p-24 } + [127, -128, 100.25]
        #expect(Self.decode(Self.encode(floats)) == floats)
    }

    @Test func aBufferListOfTheCanonicalFormatDecodesEachChannelBuffer() throws {
        let format = Self.canonical
        let pcm = try OwnedPCMBufferList(format: format, frameCapacity: 4)
        let left: [Int32] = [0x0080_0000, -0x0080_0000, 0x0100_0000, 0]
        let right: [Int32] = [0x0040_0000, 1, -1, 0x0200_0000]
        for (index, words) in [left, right].enumerated() {
            for (frame, word) in words.enumerated() {
                pcm.bytes(index).storeBytes(of: UInt32(bitPattern: word).littleEndian, toByteOffset: frame * 4, as: UInt32.self)
            }
        }
        let canonical = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 4)
        pcm.list(frameCount: 4).decode(frames: 4, offset: 0, into: canonical.list, sample: .fixed8_24)
        #expect(Array(canonical.list[0]) == [0.5, -0.5, 1, 0])
        #expect(Array(canonical.list[1]) == [0.25, 0x1p-24, -0x1p-24, 2])
        let back = try OwnedPCMBufferList(format: format, frameCapacity: 4)
        back.list(frameCount: 4).encode(canonical.list, frames: 4, offset: 0, sample: .fixed8_24)
        #expect(Array(back.bytes(0)) == Array(pcm.bytes(0)) && Array(back.bytes(1)) == Array(pcm.bytes(1)))
    }
}
