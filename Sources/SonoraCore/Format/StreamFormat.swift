/// A stream's data format, field for field Core Audio's `AudioStreamBasicDescription`.
///
/// For non-interleaved formats (`.isNonInterleaved`), as in Core Audio,
/// `bytesPerFrame` and `bytesPerPacket` describe one channel's buffer.
@frozen
public struct StreamFormat: Hashable, Sendable, BitwiseCopyable {
    public var sampleRate: Double
    public var formatID: AudioFormatID
    public var formatFlags: AudioFormatFlags
    public var bytesPerPacket: UInt32
    public var framesPerPacket: UInt32
    public var bytesPerFrame: UInt32
    public var channelsPerFrame: UInt32
    public var bitsPerChannel: UInt32

    public init(
        sampleRate: Double,
        formatID: AudioFormatID,
        formatFlags: AudioFormatFlags,
        bytesPerPacket: UInt32,
        framesPerPacket: UInt32,
        bytesPerFrame: UInt32,
        channelsPerFrame: UInt32,
        bitsPerChannel: UInt32
    ) {
        self.sampleRate = sampleRate
        self.formatID = formatID
        self.formatFlags = formatFlags
        self.bytesPerPacket = bytesPerPacket
        self.framesPerPacket = framesPerPacket
        self.bytesPerFrame = bytesPerFrame
        self.channelsPerFrame = channelsPerFrame
        self.bitsPerChannel = bitsPerChannel
    }
}

// MARK: - Derived facts

extension StreamFormat {
    @inlinable public var isLinearPCM: Bool { formatID == .linearPCM }
    @inlinable public var isFloat: Bool { formatFlags.contains(.isFloat) }
    @inlinable public var isSignedInteger: Bool { formatFlags.contains(.isSignedInteger) }
    @inlinable public var isBigEndian: Bool { formatFlags.contains(.isBigEndian) }
    @inlinable public var isPacked: Bool { formatFlags.contains(.isPacked) }
    @inlinable public var isInterleaved: Bool { !formatFlags.contains(.isNonInterleaved) }

    /// Fraction bits of fixed-point integer samples (24 for 8.24), from the flags'
    /// `sampleFractionMask` field; 0 for plain integers and floats.
    public var sampleFractionBits: Int {
        get { Int((formatFlags.rawValue & AudioFormatFlags.sampleFractionMask.rawValue) >> AudioFormatFlags.sampleFractionShift) }
        set {
            formatFlags.remove(.sampleFractionMask)
            formatFlags.insert(.sampleFractionBits(newValue))
        }
    }

    /// Buffers a buffer list of this format holds: one per channel when non-interleaved.
    @inlinable public var bufferCount: Int { isInterleaved ? 1 : Int(channelsPerFrame) }

    /// Channels in each buffer: all of them when interleaved, one otherwise.
    @inlinable public var channelsPerBuffer: Int { isInterleaved ? Int(channelsPerFrame) : 1 }

    /// Bytes one sample occupies (its container) for linear PCM; 0 for other formats.
    public var bytesPerSample: Int {
        guard isLinearPCM, channelsPerBuffer > 0 else { return 0 }
        return Int(bytesPerFrame) / channelsPerBuffer
    }

    /// Sonora's internal format: native-endian packed Float32, one buffer per channel.
    public var isCanonical: Bool {
        self == .canonical(sampleRate: sampleRate, channels: Int(channelsPerFrame))
    }
}

// MARK: - Constructors

/// Sample encodings of linear PCM that Sonora reads and writes.
public enum PCMSample: Hashable, Sendable, CaseIterable {
    /// 8-bit unsigned, as in 8-bit WAV.
    case uint8
    case int16
    /// 24 bits in 3 bytes.
    case int24
    /// 24 bits in the low bytes of a 4-byte container (ALSA's S24_LE).
    case int24In32
    case int32
    case float32
    case float64
    /// 8.24 fixed point: a signed 32-bit integer with 24 fraction bits, so 1.0 is
    /// 0x0100_0000 and the range is ±128 (the iPhone audio units' canonical sample).
    case fixed8_24

    var bits: UInt32 {
        switch self {
        case .uint8: 8
        case .int16: 16
        case .int24, .int24In32: 24
        case .int32, .float32, .fixed8_24: 32
        case .float64: 64
        }
    }

    var containerBytes: UInt32 {
        switch self {
        case .uint8: 1
        case .int16: 2
        case .int24: 3
        case .int24In32, .int32, .float32, .fixed8_24: 4
        case .float64: 8
        }
    }

    var flags: AudioFormatFlags {
        switch self {
        case .uint8: [.isPacked]
        case .int16, .int24, .int32: [.isSignedInteger, .isPacked]
        case .int24In32: [.isSignedInteger]
        case .float32, .float64: [.isFloat, .isPacked]
        case .fixed8_24: [.isSignedInteger, .isPacked, .sampleFractionBits(24)]
        }
    }
}

extension StreamFormat {
    /// Sonora's canonical format: native Float32, non-interleaved, one buffer per channel.
    public static func canonical(sampleRate: Double, channels: Int) -> StreamFormat {
        .linearPCM(sampleRate: sampleRate, channels: channels, sample: .float32, interleaved: false)
    }

    /// A linear PCM format (the common interchange formats of files and devices).
    public static func linearPCM(
        sampleRate: Double,
        channels: Int,
        sample: PCMSample,
        interleaved: Bool = true,
        bigEndian: Bool = false
    ) -> StreamFormat {
        var flags = sample.flags
        if !interleaved { flags.insert(.isNonInterleaved) }
        if bigEndian { flags.insert(.isBigEndian) }
        let channelCount = UInt32(clamping: max(channels, 0))
        let bytesPerFrame = sample.containerBytes * (interleaved ? channelCount : 1)
        return StreamFormat(
            sampleRate: sampleRate, formatID: .linearPCM, formatFlags: flags,
            bytesPerPacket: bytesPerFrame, framesPerPacket: 1, bytesPerFrame: bytesPerFrame,
            channelsPerFrame: channelCount, bitsPerChannel: sample.bits)
    }

    /// The iPhone's canonical audio-unit format (`kAudioFormatFlagsAudioUnitCanonical` there):
    /// native-endian signed 8.24 fixed point, one 4-byte buffer per channel.
    public static func audioUnitCanonical8_24(sampleRate: Double, channels: Int) -> StreamFormat {
        .linearPCM(sampleRate: sampleRate, channels: channels, sample: .fixed8_24, interleaved: false)
    }

    /// Apple IMA4 ADPCM: packets of 64 frames, 34 bytes per channel.
    public static func appleIMA4(sampleRate: Double, channels: Int) -> StreamFormat {
        let channelCount = UInt32(clamping: max(channels, 0))
        return StreamFormat(
            sampleRate: sampleRate, formatID: .appleIMA4, formatFlags: [],
            bytesPerPacket: 34 * channelCount, framesPerPacket: 64, bytesPerFrame: 0,
            channelsPerFrame: channelCount, bitsPerChannel: 0)
    }

    /// A compressed format whose packets the container describes (AAC, ALAC, MP3, FLAC, Opus, Vorbis).
    public static func compressed(_ formatID: AudioFormatID, sampleRate: Double, channels: Int) -> StreamFormat {
        if formatID == .appleIMA4 { return .appleIMA4(sampleRate: sampleRate, channels: channels) }
        return StreamFormat(
            sampleRate: sampleRate, formatID: formatID, formatFlags: [],
            bytesPerPacket: 0, framesPerPacket: formatID.framesPerPacket ?? 0, bytesPerFrame: 0,
            channelsPerFrame: UInt32(clamping: max(channels, 0)), bitsPerChannel: 0)
    }

    /// The PCM sample encoding of this format, if it is one Sonora converts.
    public var pcmSample: PCMSample? {
        guard isLinearPCM else { return nil }
        return PCMSample.allCases.first { sample in
            sample.bits == bitsPerChannel && UInt32(bytesPerSample) == sample.containerBytes
                && sample.flags == formatFlags.intersection([.isFloat, .isSignedInteger, .isPacked, .sampleFractionMask])
                && !formatFlags.contains(.isAlignedHigh)
        }
    }
}
