import SonoraCore

/// The WAV IMA ADPCM block layout (format tag 0x11, as sox and libsndfile write
/// it): per channel a 4-byte header (little-endian first sample, step index,
/// reserved), then groups of 4 bytes per channel in turn (8 codes each, low
/// nibble first). A block of `blockAlign` bytes holds
/// `(blockAlign − 4·channels)·8 / (4·channels) + 1` frames.
public enum WAVIMAADPCM {
    public static func framesPerBlock(blockAlign: Int, channels: Int) -> Int {
        (blockAlign - 4 * channels) * 2 / channels + 1
    }

    /// Decodes one block into 16-bit samples per channel. Throws on a short or malformed block.
    public static func decode(block: UnsafeRawBufferPointer, channels: Int) throws(AudioError) -> [[Int16]] {
        guard channels > 0, block.count > 4 * channels, (block.count - 4 * channels) % (4 * channels) == 0 else {
            throw AudioError(.invalidFileData, "an IMA ADPCM block of \(block.count) bytes does not fit \(channels) channels")
        }
        var states: [IMAADPCMChannel] = []
        var output: [[Int16]] = Array(repeating: [], count: channels)
        for channel in 0..<channels {
            let base = channel * 4
            let first = Int16(bitPattern: UInt16(block[base]) | UInt16(block[base + 1]) << 8)
            let index = Int32(block[base + 2])
            guard index <= 88 else {
                throw AudioError(.invalidFileData, "IMA ADPCM block header of channel \(channel) has step index \(index) (0…88)")
            }
            states.append(IMAADPCMChannel(predictor: Int32(first), stepIndex: index))
            output[channel].append(first)
        }
        var offset = 4 * channels
        while offset < block.count {
            for channel in 0..<channels {
                for byte in 0..<4 {
                    let value = block[offset + channel * 4 + byte]
                    output[channel].append(states[channel].decode(value & 0x0F))
                    output[channel].append(states[channel].decode(value >> 4))
                }
            }
            offset += 4 * channels
        }
        return output
    }
}
