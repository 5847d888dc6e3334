/// The header of an AAC frame in ADTS (ISO/IEC 13818-7 / 14496-3 `adts_fixed_header` and
/// `adts_variable_header`): 7 bytes, 9 with the CRC. Core Audio hands out the raw AAC
/// payload without it, and so does Sonora.
struct ADTSFrameHeader: SyncFrameHeader, Equatable {
    /// The MPEG-4 audio object type (ADTS profile + 1: 1 Main, 2 LC, 3 SSR, 4 LTP).
    let objectType: Int
    let sampleRateIndex: Int
    let sampleRate: Int
    /// 1–7 (7 is 7.1); 0 (the layout in the payload) is not accepted.
    let channelConfiguration: Int
    let hasCRC: Bool
    /// The whole frame in bytes, header included.
    let frameLength: Int
    /// Raw data blocks in the frame (1 in every stream Sonora accepts).
    let rawDataBlocks: Int
    let raw: UInt32

    static let headerBytes = 7
    static let sampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    init?(_ bytes: UnsafeRawBufferPointer) {
        // Sync (12 bits), MPEG version (either), layer 00.
        guard bytes.count >= 7, bytes[0] == 0xFF, bytes[1] & 0xF6 == 0xF0 else { return nil }
        hasCRC = bytes[1] & 1 == 0
        objectType = Int(bytes[2] >> 6) + 1
        sampleRateIndex = Int(bytes[2] >> 2) & 0xF
        channelConfiguration = Int(bytes[2] & 1) << 2 | Int(bytes[3] >> 6)
        frameLength = Int(bytes[3] & 3) << 11 | Int(bytes[4]) << 3 | Int(bytes[5] >> 5)
        rawDataBlocks = Int(bytes[6] & 3) + 1
        guard sampleRateIndex < Self.sampleRates.count, channelConfiguration != 0,
              frameLength > (hasCRC ? 9 : 7) else { return nil }
        sampleRate = Self.sampleRates[sampleRateIndex]
        raw = UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])
    }

    var payloadOffset: Int { hasCRC ? 9 : 7 }

    /// Sync, version, layer, CRC flag, profile, rate and channels: fixed for a whole stream.
    var streamKey: UInt32 { raw & 0xFFFF_FDC0 }

    var channels: Int { channelConfiguration == 7 ? 8 : channelConfiguration }

    /// The AudioSpecificConfig (ISO/IEC 14496-3 1.6.2.1) this header implies: object type,
    /// rate index, channels, and a GASpecificConfig of zeros (1024-frame packets).
    var audioSpecificConfig: [UInt8] {
        let bits = objectType << 11 | sampleRateIndex << 7 | channelConfiguration << 3
        return [UInt8(bits >> 8), UInt8(bits & 0xFF)]
    }

    /// ADTS's 13-bit frame length bounds every packet; a raw block is at most 6144 bits a channel.
    var packetSizeUpperBound: Int { min(8191, 768 * channels) }
}
