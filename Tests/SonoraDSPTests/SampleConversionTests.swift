import SonoraCore
import SonoraDSP
import Testing

@Suite("Sample conversion")
struct SampleConversionTests {
    static let integerTypes: [PCMSample] = [.uint8, .int16, .int24, .int24In32, .int32]

    /// Full scale of each integer type: Float value = integer / scale.
    static func scale(_ sample: PCMSample) -> Double {
        switch sample {
        case .uint8: 128
        case .int16: 32768
        case .int24, .int24In32: 8_388_608
        case .int32: 2_147_483_648
        case .fixed8_24: 16_777_216
        case .float32, .float64: 1
        }
    }

    /// What a value should decode to after an encode: rounded to nearest (ties to even) and
    /// clipped to −scale…scale − 1 integer steps (8.24: to the whole int32 range, ±128).
    static func quantized(_ x: Float, _ sample: PCMSample) -> Float {
        let scale = scale(sample)
        if sample == .float32 || sample == .float64 { return x }
        if x.isNaN { return 0 }
        let (low, high) = sample == .fixed8_24 ? (-2_147_483_648.0, 2_147_483_647.0) : (-scale, scale - 1)
        let integer = min(max((Double(x) * scale).rounded(.toNearestOrEven), low), high)
        return Float(integer / scale)
    }

    static func encode(_ values: [Float], _ sample: PCMSample, bigEndian: Bool, stride: Int, offset: Int = 0, into bytes: inout [UInt8]) {
        values.withUnsafeBufferPointer { source in
            bytes.withUnsafeMutableBytes { raw in
                SampleConversion.encode(
                    source.baseAddress!, count: values.count, into: raw.baseAddress! + offset,
                    sample: sample, bigEndian: bigEndian, stride: stride)
            }
        }
    }

    static func decode(_ bytes: [UInt8], _ sample: PCMSample, bigEndian: Bool, stride: Int, offset: Int = 0, count: Int) -> [Float] {
        var values = [Float](repeating: .nan, count: count)
        bytes.withUnsafeBytes { raw in
            values.withUnsafeMutableBufferPointer { destination in
                SampleConversion.decode(
                    raw.baseAddress! + offset, sample: sample, bigEndian: bigEndian, stride: stride,
                    into: destination.baseAddress!, count: count)
            }
        }
        return values
    }

    static let values: [Float] = [
        0, 1, -1, 0.5, -0.5, 0.25, -0.123456, 0.999_999, -0.999_999, 1e-6, -1e-9, 0.1, -0.7, 1.5, -2, 0.000_03,
    ] + (0..<200).map { Float($0) / 100 - 1 }

    @Test(arguments: PCMSample.allCases, [false, true])
    func roundTripsNonInterleavedAndInterleaved(_ sample: PCMSample, _ bigEndian: Bool) {
        let size = SampleConversion.byteCount(of: sample)
        let expected = Self.values.map { Self.quantized($0, sample) }

        var packed = [UInt8](repeating: 0, count: size * Self.values.count)
        Self.encode(Self.values, sample, bigEndian: bigEndian, stride: size, into: &packed)
        #expect(Self.decode(packed, sample, bigEndian: bigEndian, stride: size, count: Self.values.count) == expected)

        // Channel 1 of 3, interleaved: the other channels' bytes stay as they were.
        let frame = 3 * size
        var interleaved = [UInt8](repeating: 0xA5, count: frame * Self.values.count)
        Self.encode(Self.values, sample, bigEndian: bigEndian, stride: frame, offset: size, into: &interleaved)
        #expect(Self.decode(interleaved, sample, bigEndian: bigEndian, stride: frame, offset: size, count: Self.values.count) == expected)
        for index in interleaved.indices where (index % frame) / size != 1 {
            #expect(interleaved[index] == 0xA5)
        }
        // The same samples, packed or interleaved, have the same bytes.
        for n in Self.values.indices {
            #expect(Array(interleaved[(n * frame + size)..<(n * frame + 2 * size)]) == Array(packed[(n * size)..<((n + 1) * size)]))
        }
    }

    @Test(arguments: integerTypes, [false, true])
    func integersSurviveDecodeThenEncode(_ sample: PCMSample, _ bigEndian: Bool) {
        let size = SampleConversion.byteCount(of: sample)
        // Every value of the small types; a spread including the extremes of the large ones.
        let integers: [Int64] = switch sample {
        case .uint8: Array(-128...127)
        case .int16: Array(-32768...32767)
        case .int24, .int24In32: Array(stride(from: -8_388_608, through: 8_388_607, by: 4099)) + [-8_388_608, -1, 0, 1, 8_388_607]
        default: [-2_147_483_648, -2_147_483_392, -256, 0, 256, 123_456_768, 2_147_483_392]
        }
        var bytes = [UInt8](repeating: 0, count: size * integers.count)
        for (n, integer) in integers.enumerated() {
            // Built by hand, so encode is checked against an independent byte layout.
            let unsigned = UInt64(bitPattern: sample == .uint8 ? integer + 128 : integer)
            for byte in 0..<size {
                let shift = bigEndian ? (size - 1 - byte) * 8 : byte * 8
                bytes[n * size + byte] = UInt8(truncatingIfNeeded: unsigned >> UInt64(shift))
            }
        }
        let decoded = Self.decode(bytes, sample, bigEndian: bigEndian, stride: size, count: integers.count)
        #expect(decoded == integers.map { Float(Double($0) / Self.scale(sample)) })
        var encoded = [UInt8](repeating: 0, count: bytes.count)
        Self.encode(decoded, sample, bigEndian: bigEndian, stride: size, into: &encoded)
        #expect(encoded == bytes)
    }

    @Test(arguments: integerTypes, [false, true])
    func encodeClipsAtFullScaleAndZeroesNaN(_ sample: PCMSample, _ bigEndian: Bool) {
        let size = SampleConversion.byteCount(of: sample)
        let inputs: [Float] = [1, 1.000_001, 7, .infinity, -1, -1.000_001, -7, -.infinity, .nan, -.nan]
        var bytes = [UInt8](repeating: 0, count: size * inputs.count)
        Self.encode(inputs, sample, bigEndian: bigEndian, stride: size, into: &bytes)
        let maximum = Float((Self.scale(sample) - 1) / Self.scale(sample))
        #expect(Self.decode(bytes, sample, bigEndian: bigEndian, stride: size, count: inputs.count)
            == [maximum, maximum, maximum, maximum, -1, -1, -1, -1, 0, 0])
    }

    @Test func exactBytes() {
        func bytes(_ value: Float, _ sample: PCMSample, bigEndian: Bool = false) -> [UInt8] {
            var result = [UInt8](repeating: 0xEE, count: SampleConversion.byteCount(of: sample))
            Self.encode([value], sample, bigEndian: bigEndian, stride: result.count, into: &result)
            return result
        }
        #expect(bytes(0, .uint8) == [0x80])
        #expect(bytes(1, .uint8) == [0xFF])
        #expect(bytes(-1, .uint8) == [0x00])
        #expect(bytes(0.5, .int16) == [0x00, 0x40])
        #expect(bytes(0.5, .int16, bigEndian: true) == [0x40, 0x00])
        #expect(bytes(1, .int16) == [0xFF, 0x7F])
        #expect(bytes(-1, .int16, bigEndian: true) == [0x80, 0x00])
        #expect(bytes(-1, .int24) == [0x00, 0x00, 0x80])
        #expect(bytes(1, .int24, bigEndian: true) == [0x7F, 0xFF, 0xFF])
        #expect(bytes(-1 / 8_388_608, .int24In32) == [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(bytes(0.5, .int24In32) == [0x00, 0x00, 0x40, 0x00])
        #expect(bytes(-0.5, .int24In32, bigEndian: true) == [0xFF, 0xC0, 0x00, 0x00])
        #expect(bytes(1, .int32) == [0xFF, 0xFF, 0xFF, 0x7F])
        #expect(bytes(-1, .int32, bigEndian: true) == [0x80, 0x00, 0x00, 0x00])
        #expect(bytes(1, .float32) == [0x00, 0x00, 0x80, 0x3F])
        #expect(bytes(1, .float32, bigEndian: true) == [0x3F, 0x80, 0x00, 0x00])
        #expect(bytes(-2, .float64, bigEndian: true) == [0xC0, 0, 0, 0, 0, 0, 0, 0])
        #expect(bytes(1, .float64) == [0, 0, 0, 0, 0, 0, 0xF0, 0x3F])
    }

    @Test func encodeRoundsToNearestWithTiesToEven() {
        let step: Float = 1 / 32768
        let inputs: [Float] = [1.4, 1.6, -1.6, 0.5, 1.5, 2.5, -0.5, -2.5].map { $0 * step }
        var bytes = [UInt8](repeating: 0, count: 2 * inputs.count)
        Self.encode(inputs, .int16, bigEndian: false, stride: 2, into: &bytes)
        let integers = Self.decode(bytes, .int16, bigEndian: false, stride: 2, count: inputs.count).map { Int($0 * 32768) }
        #expect(integers == [1, 2, -2, 0, 2, 2, 0, -2])
    }

    @Test func int24In32IgnoresThePaddingByte() {
        // 0.5 with every possible junk top byte, little- and big-endian.
        for junk: UInt8 in [0x00, 0x12, 0x80, 0xFF] {
            #expect(Self.decode([0x00, 0x00, 0x40, junk], .int24In32, bigEndian: false, stride: 4, count: 1) == [0.5])
            #expect(Self.decode([junk, 0xC0, 0x00, 0x00], .int24In32, bigEndian: true, stride: 4, count: 1) == [-0.5])
        }
    }

    @Test(arguments: [PCMSample.float32, .float64], [false, true])
    func floatsPassThroughUnclipped(_ sample: PCMSample, _ bigEndian: Bool) {
        let inputs: [Float] = [3.5, -1e30, .infinity, -.infinity, .leastNonzeroMagnitude, -0.0, .greatestFiniteMagnitude]
        let size = SampleConversion.byteCount(of: sample)
        var bytes = [UInt8](repeating: 0, count: size * inputs.count)
        Self.encode(inputs, sample, bigEndian: bigEndian, stride: size, into: &bytes)
        let decoded = Self.decode(bytes, sample, bigEndian: bigEndian, stride: size, count: inputs.count)
        #expect(decoded.map { $0.bitPattern } == inputs.map { $0.bitPattern })

        var nan = [UInt8](repeating: 0, count: size)
        Self.encode([.nan], sample, bigEndian: bigEndian, stride: size, into: &nan)
        #expect(Self.decode(nan, sample, bigEndian: bigEndian, stride: size, count: 1)[0].isNaN)
    }

    @Test func byteCounts() {
        #expect(PCMSample.allCases.map { SampleConversion.byteCount(of: $0) } == [1, 2, 3, 4, 4, 4, 8, 4])
    }
}
