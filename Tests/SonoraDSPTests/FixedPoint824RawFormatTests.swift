import SonoraCore
import SonoraDSP
import Testing

/// The defect as a port meets it: a format built from Core Audio's raw fields with
/// `kAudioFormatFlagsAudioUnitCanonical` (8.24) was converted as plain int32, so 0.5 was
/// written as 1,073,741,824 (0x4000_0000) instead of 0x0080_0000. Uses only the fields
/// and conversion calls that existed before 8.24 support.
@Suite("8.24 from raw fields")
struct FixedPoint824RawFormatTests {
    @Test func halfIsWrittenAndReadAsEightPointTwentyFour() throws {
        let flags = AudioFormatFlags(rawValue: 0x4 | 0x8 | 0x20 | (24 << 7))  // signed, packed, non-interleaved, 24 fraction bits
        let format = StreamFormat(
            sampleRate: 44100, formatID: .linearPCM, formatFlags: flags, bytesPerPacket: 4, framesPerPacket: 1,
            bytesPerFrame: 4, channelsPerFrame: 1, bitsPerChannel: 32)
        let sample = try #require(format.pcmSample)
        let canonical = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 2)
        canonical.list[0][0] = 0.5
        canonical.list[0][1] = -2
        let pcm = try OwnedPCMBufferList(format: format, frameCapacity: 2)
        pcm.list(frameCount: 2).encode(canonical.list, frames: 2, offset: 0, sample: sample)
        let words = (0..<2).map { Int32(bitPattern: UInt32(littleEndian: pcm.bytes(0).load(fromByteOffset: $0 * 4, as: UInt32.self))) }
        #expect(words == [0x0080_0000, -0x0200_0000])
        let back = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 2)
        pcm.list(frameCount: 2).decode(frames: 2, offset: 0, into: back.list, sample: sample)
        #expect(Array(back.list[0]) == [0.5, -2])
    }
}
