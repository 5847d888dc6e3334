/// The 4-byte header of an MPEG-1/2/2.5 audio frame (layers I, II and III), as
/// ISO/IEC 11172-3 and 13818-3 define it. Free-format (bit-rate index 0) and the
/// reserved values are rejected: a header with them is junk, not a frame.
struct MPEGAudioFrameHeader: SyncFrameHeader, Equatable {
    enum Version: Equatable { case mpeg1, mpeg2, mpeg25 }

    let version: Version
    /// 1, 2 or 3.
    let layer: Int
    let hasCRC: Bool
    /// Bits per second.
    let bitRate: Int
    let sampleRate: Int
    let isPadded: Bool
    /// 0 stereo, 1 joint stereo, 2 dual channel, 3 mono.
    let channelMode: Int
    let raw: UInt32

    static let headerBytes = 4

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] & 0xE0 == 0xE0 else { return nil }
        let versionBits = (bytes[1] >> 3) & 3
        let layerBits = (bytes[1] >> 1) & 3
        let rateIndex = Int(bytes[2] >> 2) & 3
        let bitRateIndex = Int(bytes[2] >> 4)
        guard versionBits != 1, layerBits != 0, rateIndex != 3, bitRateIndex != 0, bitRateIndex != 15 else { return nil }
        version = versionBits == 3 ? .mpeg1 : (versionBits == 2 ? .mpeg2 : .mpeg25)
        layer = 4 - Int(layerBits)
        hasCRC = bytes[1] & 1 == 0
        let kilobits: [Int]
        switch (version, layer) {
        case (.mpeg1, 1): kilobits = [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448]
        case (.mpeg1, 2): kilobits = [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384]
        case (.mpeg1, _): kilobits = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
        case (_, 1): kilobits = [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256]
        default: kilobits = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
        }
        bitRate = kilobits[bitRateIndex] * 1000
        let rates = [44100, 48000, 32000]
        sampleRate = rates[rateIndex] / (version == .mpeg1 ? 1 : (version == .mpeg2 ? 2 : 4))
        isPadded = bytes[2] & 2 != 0
        channelMode = Int(bytes[3] >> 6)
        raw = UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])
    }

    var channels: Int { channelMode == 3 ? 1 : 2 }

    /// Frames (samples per channel) one packet decodes to.
    var samplesPerFrame: Int {
        switch layer {
        case 1: 384
        case 2: 1152
        default: version == .mpeg1 ? 1152 : 576
        }
    }

    /// The whole frame in bytes, header included.
    var frameLength: Int {
        switch layer {
        case 1: (12 * bitRate / sampleRate + (isPadded ? 1 : 0)) * 4
        case 2: 144 * bitRate / sampleRate + (isPadded ? 1 : 0)
        default: (version == .mpeg1 ? 144 : 72) * bitRate / sampleRate + (isPadded ? 1 : 0)
        }
    }

    /// MP3 packets are whole frames, header included.
    var payloadOffset: Int { 0 }

    /// The bits every frame of one stream shares: sync, version, layer and sample rate
    /// (ffmpeg's SAME_HEADER_MASK); bit rate, padding and mode may change frame to frame.
    var streamKey: UInt32 { raw & 0xFFFE_0C00 }

    /// The largest frame a stream of this version, layer and rate can have (highest bit rate, padded).
    var packetSizeUpperBound: Int {
        let top: Int
        switch (version, layer) {
        case (.mpeg1, 1): top = 448_000
        case (.mpeg1, 2): top = 384_000
        case (.mpeg1, _): top = 320_000
        case (_, 1): top = 256_000
        default: top = 160_000
        }
        switch layer {
        case 1: return (12 * top / sampleRate + 1) * 4
        case 2: return 144 * top / sampleRate + 1
        default: return (version == .mpeg1 ? 144 : 72) * top / sampleRate + 1
        }
    }

    /// Where a Xing/Info tag starts in a layer III frame: after the header and the side
    /// information (17/32 bytes for MPEG-1 mono/stereo, 9/17 for MPEG-2/2.5), as LAME writes it.
    var xingTagOffset: Int {
        4 + (version == .mpeg1 ? (channels == 1 ? 17 : 32) : (channels == 1 ? 9 : 17))
    }
}
