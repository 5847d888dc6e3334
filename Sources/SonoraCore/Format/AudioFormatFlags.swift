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

    /// Big-endian on big-endian hosts, otherwise empty.
    public static var nativeEndian: AudioFormatFlags {
        1.bigEndian == 1 ? .isBigEndian : []
    }

    /// Native-endian packed float (`kAudioFormatFlagsNativeFloatPacked`).
    public static var nativeFloatPacked: AudioFormatFlags { [.isFloat, .isPacked, nativeEndian] }
}
