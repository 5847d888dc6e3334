import SonoraCore

/// Converts between PCM sample bytes (integer or float, either byte order, interleaved or
/// not) and canonical Float samples — what devices and files need at the graph's edges.
///
/// Integers scale by a power of two (int16 ↔ 32768, int24 ↔ 8388608, int32 ↔ 2147483648,
/// uint8 ↔ (x − 128)/128), so every integer value decodes exactly and encodes back to
/// itself. Encoding rounds to nearest (ties to even) and clips to the representable range:
/// +1.0 becomes 32767 for int16, −1.0 becomes −32768; NaN becomes 0. Floats pass through
/// unchanged, unclipped.
///
/// 8.24 fixed point (`fixed8_24`) scales by 2^24 (0.5 ⇄ 0x0080_0000) and clips at its own
/// range, ±128 (−2^31…2^31 − 1 raw), not at ±1: as Core Audio's 8.24 carries headroom.
///
/// `stride` is the distance in bytes between one sample of the channel and the next: the
/// sample size for non-interleaved data, bytes per frame for interleaved data (start at the
/// channel's byte offset within the frame).
public enum SampleConversion {
    /// Bytes one sample of `sample` occupies (its container, 4 for `int24In32`).
    @inlinable
    public static func byteCount(of sample: PCMSample) -> Int {
        switch sample {
        case .uint8: 1
        case .int16: 2
        case .int24: 3
        case .int24In32, .int32, .float32, .fixed8_24: 4
        case .float64: 8
        }
    }

    /// Reads `count` samples of type `sample`, `stride` bytes apart, into Float.
    @inlinable
    public static func decode(
        _ source: UnsafeRawPointer, sample: PCMSample, bigEndian: Bool, stride: Int,
        into destination: UnsafeMutablePointer<Float>, count: Int
    ) {
        var index = 0
        var offset = 0
        switch sample {
        case .uint8:
            while index < count {
                let byte = source.load(fromByteOffset: offset, as: UInt8.self)
                destination[index] = (Float(byte) - 128) * (1 / 128)
                index &+= 1
                offset &+= stride
            }
        case .int16:
            while index < count {
                let word = loadUInt16(source + offset, bigEndian: bigEndian)
                destination[index] = Float(Int16(bitPattern: word)) * (1 / 32768)
                index &+= 1
                offset &+= stride
            }
        case .int24:
            while index < count {
                let bytes = source + offset
                let b0 = UInt32(bytes.load(as: UInt8.self))
                let b1 = UInt32(bytes.load(fromByteOffset: 1, as: UInt8.self))
                let b2 = UInt32(bytes.load(fromByteOffset: 2, as: UInt8.self))
                let word = bigEndian ? (b0 << 16 | b1 << 8 | b2) : (b2 << 16 | b1 << 8 | b0)
                destination[index] = Float(signExtend24(word)) * (1 / 8_388_608)
                index &+= 1
                offset &+= stride
            }
        case .int24In32:
            while index < count {
                // The container's top byte is padding; ALSA leaves it undefined.
                let word = loadUInt32(source + offset, bigEndian: bigEndian)
                destination[index] = Float(signExtend24(word)) * (1 / 8_388_608)
                index &+= 1
                offset &+= stride
            }
        case .int32:
            while index < count {
                let word = loadUInt32(source + offset, bigEndian: bigEndian)
                destination[index] = Float(Int32(bitPattern: word)) * (1 / 2_147_483_648)
                index &+= 1
                offset &+= stride
            }
        case .fixed8_24:
            while index < count {
                let word = loadUInt32(source + offset, bigEndian: bigEndian)
                destination[index] = Float(Int32(bitPattern: word)) * (1 / 16_777_216)
                index &+= 1
                offset &+= stride
            }
        case .float32:
            while index < count {
                destination[index] = Float(bitPattern: loadUInt32(source + offset, bigEndian: bigEndian))
                index &+= 1
                offset &+= stride
            }
        case .float64:
            while index < count {
                let word = source.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                destination[index] = Float(Double(bitPattern: bigEndian ? UInt64(bigEndian: word) : UInt64(littleEndian: word)))
                index &+= 1
                offset &+= stride
            }
        }
    }

    /// Writes `count` Float samples as `sample`, `stride` bytes apart, leaving the bytes
    /// in between (other channels' samples) untouched.
    @inlinable
    public static func encode(
        _ source: UnsafePointer<Float>, count: Int,
        into destination: UnsafeMutableRawPointer, sample: PCMSample, bigEndian: Bool, stride: Int
    ) {
        var index = 0
        var offset = 0
        switch sample {
        case .uint8:
            while index < count {
                let value = quantize(source[index], scale: 128, minimum: -128, maximum: 127) + 128
                destination.storeBytes(of: UInt8(truncatingIfNeeded: value), toByteOffset: offset, as: UInt8.self)
                index &+= 1
                offset &+= stride
            }
        case .int16:
            while index < count {
                let value = quantize(source[index], scale: 32768, minimum: -32768, maximum: 32767)
                storeUInt16(UInt16(truncatingIfNeeded: value), at: destination + offset, bigEndian: bigEndian)
                index &+= 1
                offset &+= stride
            }
        case .int24:
            while index < count {
                let value = quantize(source[index], scale: 8_388_608, minimum: -8_388_608, maximum: 8_388_607)
                let word = UInt32(bitPattern: value)
                let bytes = destination + offset
                let low = UInt8(truncatingIfNeeded: word)
                let middle = UInt8(truncatingIfNeeded: word >> 8)
                let high = UInt8(truncatingIfNeeded: word >> 16)
                bytes.storeBytes(of: bigEndian ? high : low, as: UInt8.self)
                bytes.storeBytes(of: middle, toByteOffset: 1, as: UInt8.self)
                bytes.storeBytes(of: bigEndian ? low : high, toByteOffset: 2, as: UInt8.self)
                index &+= 1
                offset &+= stride
            }
        case .int24In32:
            while index < count {
                // Sign-extended into the padding byte, which readers that ignore it and
                // readers that treat the word as a scaled int32 both accept.
                let value = quantize(source[index], scale: 8_388_608, minimum: -8_388_608, maximum: 8_388_607)
                storeUInt32(UInt32(bitPattern: value), at: destination + offset, bigEndian: bigEndian)
                index &+= 1
                offset &+= stride
            }
        case .int32:
            while index < count {
                storeUInt32(UInt32(bitPattern: quantize32(source[index])), at: destination + offset, bigEndian: bigEndian)
                index &+= 1
                offset &+= stride
            }
        case .fixed8_24:
            while index < count {
                let value = quantize32(source[index], scale: 16_777_216)
                storeUInt32(UInt32(bitPattern: value), at: destination + offset, bigEndian: bigEndian)
                index &+= 1
                offset &+= stride
            }
        case .float32:
            while index < count {
                storeUInt32(source[index].bitPattern, at: destination + offset, bigEndian: bigEndian)
                index &+= 1
                offset &+= stride
            }
        case .float64:
            while index < count {
                let bits = Double(source[index]).bitPattern
                destination.storeBytes(
                    of: bigEndian ? bits.bigEndian : bits.littleEndian, toByteOffset: offset, as: UInt64.self)
                index &+= 1
                offset &+= stride
            }
        }
    }

    // MARK: Helpers

    /// `x · scale` rounded to nearest and clipped to minimum…maximum; NaN gives 0. Exact in
    /// Float for scales up to 2^23: scaling by a power of two only moves the exponent.
    @inlinable
    static func quantize(_ x: Float, scale: Float, minimum: Float, maximum: Float) -> Int32 {
        guard !x.isNaN else { return 0 }
        let clipped = min(max((x * scale).rounded(.toNearestOrEven), minimum), maximum)
        return Int32(clipped)
    }

    /// As `quantize` into the whole int32 range, in Double, since Float cannot represent
    /// int32's maximum 2147483647. `scale` 2^31 for int32, 2^24 for 8.24.
    @inlinable
    static func quantize32(_ x: Float, scale: Double = 2_147_483_648) -> Int32 {
        guard !x.isNaN else { return 0 }
        let scaled = (Double(x) * scale).rounded(.toNearestOrEven)
        return Int32(min(max(scaled, -2_147_483_648), 2_147_483_647))
    }

    /// The low 24 bits of `word` as a signed value.
    @inlinable
    static func signExtend24(_ word: UInt32) -> Int32 {
        Int32(bitPattern: word << 8) >> 8
    }

    @inlinable
    static func loadUInt16(_ pointer: UnsafeRawPointer, bigEndian: Bool) -> UInt16 {
        let word = pointer.loadUnaligned(as: UInt16.self)
        return bigEndian ? UInt16(bigEndian: word) : UInt16(littleEndian: word)
    }

    @inlinable
    static func loadUInt32(_ pointer: UnsafeRawPointer, bigEndian: Bool) -> UInt32 {
        let word = pointer.loadUnaligned(as: UInt32.self)
        return bigEndian ? UInt32(bigEndian: word) : UInt32(littleEndian: word)
    }

    @inlinable
    static func storeUInt16(_ value: UInt16, at pointer: UnsafeMutableRawPointer, bigEndian: Bool) {
        pointer.storeBytes(of: bigEndian ? value.bigEndian : value.littleEndian, as: UInt16.self)
    }

    @inlinable
    static func storeUInt32(_ value: UInt32, at pointer: UnsafeMutableRawPointer, bigEndian: Bool) {
        pointer.storeBytes(of: bigEndian ? value.bigEndian : value.littleEndian, as: UInt32.self)
    }
}
