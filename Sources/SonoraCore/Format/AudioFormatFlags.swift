/// Format flags (`mFormatFlags`), with Core Audio's bit values.
@frozen
public struct AudioFormatFlags: OptionSet, Hashable, Sendable, BitwiseCopyable {
    public var rawValue: UInt32

    @inlinable
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let isFloat = AudioFormatFlags(rawValue: 1 << 0)
    public static let isBigEndian = AudioFormatFlags(rawValue: 1 << 1)
    public static let isSignedInteger = AudioFormatFlags(rawValue: 1 << 2)
    /// Samples fill their bytes with no padding bits.
    public static let isPacked = AudioFormatFlags(rawValue: 1 << 3)
    /// When not packed, the sample bits sit in the high bits of their container.
    public static let isAlignedHigh = AudioFormatFlags(rawValue: 1 << 4)
    /// One buffer per channel; `bytesPerFrame` then describes one channel.
    public static let isNonInterleaved = AudioFormatFlags(rawValue: 1 << 5)
    public static let isNonMixable = AudioFormatFlags(rawValue: 1 << 6)
    public static let areAllClear = AudioFormatFlags(rawValue: 0x8000_0000)

    /// Linear PCM integers with fraction bits are fixed point: the count sits in these six bits
    /// (`kLinearPCMFormatFlagsSampleFractionMask`, `0x3F << 7`).
    public static let sampleFractionMask = AudioFormatFlags(rawValue: 0x3F << sampleFractionShift)
    /// `kLinearPCMFormatFlagsSampleFractionShift`.
    public static let sampleFractionShift: UInt32 = 7

    /// The flags field saying `bits` fraction bits (0…63; others are cut to six bits).
    @inlinable
    public static func sampleFractionBits(_ bits: Int) -> AudioFormatFlags {
        AudioFormatFlags(rawValue: (UInt32(truncatingIfNeeded: bits) & 0x3F) << sampleFractionShift)
    }

    /// Big-endian on big-endian hosts, otherwise empty.
    public static var nativeEndian: AudioFormatFlags {
        1.bigEndian == 1 ? .isBigEndian : []
    }

    /// Native-endian packed float (`kAudioFormatFlagsNativeFloatPacked`).
    public static var nativeFloatPacked: AudioFormatFlags { [.isFloat, .isPacked, nativeEndian] }

    /// `kAudioFormatFlagsAudioUnitCanonical` on the iPhone: native-endian packed signed
    /// 8.24 fixed point (`kAudioUnitSampleFractionBits` = 24), non-interleaved.
    public static var audioUnitCanonical8_24: AudioFormatFlags {
        [.isSignedInteger, .isPacked, .isNonInterleaved, nativeEndian, sampleFractionBits(24)]
    }
}
