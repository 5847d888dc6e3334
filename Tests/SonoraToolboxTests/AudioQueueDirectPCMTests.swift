import Foundation
import SonoraCore
import SonoraDSP
import SonoraHAL
import SonoraTestSupport
@testable import SonoraToolbox
import Synchronization
import Testing

/// Linear PCM read in place (no copy at `enqueue`), the 16-bit fast conversion, and the
/// mixer's prefetch pass: the samples that come out are exactly those enqueued.
@Suite("AudioQueue direct PCM and the mixer's prefetch", .serialized)
struct AudioQueueDirectPCMTests {
    @Test("the 16-bit fast path converts as SampleConversion does, mono and stereo, any length and alignment")
    func fastInt16MatchesSampleConversion() throws {
        var state: UInt32 = 0x1234_5678
        let words: [Int16] = (0..<400).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return Int16(truncatingIfNeeded: state >> 16)
        } + [Int16.min, Int16.max, 0, -1, 1]
        let bytes = words.withUnsafeBytes { Array($0) }
        for channels in 1...2 {
            for count in 0..<41 {
                for byteOffset in [0, 2 * channels, 6 * channels] {
                    let fast = try OwnedAudioBufferList(channelCount: channels, frameCapacity: 64)
                    let reference = try OwnedAudioBufferList(channelCount: channels, frameCapacity: 64)
                    bytes.withUnsafeBytes { raw in
                        AudioQueue.decodeInt16(raw.baseAddress! + byteOffset, channels: channels, into: fast.list(frameCount: count))
                        for channel in 0..<channels {
                            SampleConversion.decode(raw.baseAddress! + byteOffset + channel * 2, sample: .int16, bigEndian: false,
                                                    stride: 2 * channels, into: reference.list(frameCount: count).samples(channel), count: count)
                        }
                    }
                    for channel in 0..<channels {
                        let a = Array(UnsafeBufferPointer(start: fast.list(frameCount: count).samples(channel), count: count))
                        let b = Array(UnsafeBufferPointer(start: reference.list(frameCount: count).samples(channel), count: count))
                        #expect(a.map(\.bitPattern) == b.map(\.bitPattern), "\(channels) channels, \(count) frames, offset \(byteOffset)")
                    }
                }
            }
        }
    }

    /// 16-bit values for `frames` frames of `channels`, distinct per `seed` (small: sums stay exact).
    static func words(frames: Int, channels: Int, seed: Int) -> [Int16] {
        (0..<frames * channels).map { Int16(($0 * 37 + seed * 101) % 4001 - 2000) }
    }

    @Test("buffers read in place and refilled as they come back (a ring smaller than a buffer, trims at both ends) play exactly, beside a mono, a stopped and a paused queue")
    func inPlaceBuffersThroughThePrefetchingMixer() throws {
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let output = try AudioQueueOutput(device: tap)
        let stereo = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        // The refilled queue: each buffer that comes back is filled with the next block and
        // enqueued again (5 blocks of 1001 frames), trimmed by 3 frames at the start and 5 at the end.
        let blocks = (0..<5).map { Self.words(frames: 1001, channels: 2, seed: $0) }
        let next = Atomic<Int>(2)
        let refilled = try AudioQueue(format: stereo) { queue, buffer in
            let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
            guard index < blocks.count else { return }
            buffer.fill(with: blocks[index].withUnsafeBytes { Array($0) })
            try? queue.enqueue(buffer, trimFramesAtStart: 3, trimFramesAtEnd: 5)
        }
        // Smaller than one buffer: each is converted in pieces as the ring makes room.
        try refilled.setDecodeBufferSizeFrames(512)
        let mono = try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 1, sample: .int16)) { _, _ in }
        let stopped = try AudioQueue(format: stereo) { _, _ in }
        let paused = try AudioQueue(format: stereo) { _, _ in }
        let all = [refilled, mono, stopped, paused]
        defer { all.forEach { try? $0.dispose(immediate: true) } }
        for queue in all { try queue.setOutput(output) }
        for index in 0..<2 {
            let buffer = try refilled.allocateBuffer(byteCapacity: 1001 * 4)
            buffer.fill(with: blocks[index].withUnsafeBytes { Array($0) })
            try refilled.enqueue(buffer, trimFramesAtStart: 3, trimFramesAtEnd: 5)
        }
        let monoWords = Self.words(frames: 3000, channels: 1, seed: 9)
        let monoBuffer = try mono.allocateBuffer(byteCapacity: 6000)
        monoBuffer.fill(with: monoWords.withUnsafeBytes { Array($0) })
        try mono.enqueue(monoBuffer)
        let stoppedBuffer = try stopped.allocateBuffer(byteCapacity: 4000)
        stoppedBuffer.fill(with: Self.words(frames: 1000, channels: 2, seed: 7).withUnsafeBytes { Array($0) })
        try stopped.enqueue(stoppedBuffer)
        try stopped.prime()
        let pausedBuffer = try paused.allocateBuffer(byteCapacity: 4000)
        pausedBuffer.fill(with: Self.words(frames: 1000, channels: 2, seed: 8).withUnsafeBytes { Array($0) })
        try paused.enqueue(pausedBuffer)
        for queue in [refilled, mono, paused] {
            try queue.prime()
            try queue.start()
        }
        try paused.pause()
        // 24 cycles of 256 frames: every block's kept frames (5 × 993) and the mono buffer's 3000.
        for _ in 0..<24 {
            _ = try refilled.prime()
            try tap.run(cycles: 1)
        }
        let kept = blocks.flatMap { $0[(3 * 2)..<((1001 - 5) * 2)] }
        let played = tap.played
        for channel in 0..<2 {
            for frame in 0..<6144 {
                var expected: Float = 0
                if frame * 2 < kept.count { expected += Float(kept[frame * 2 + channel]) / 32768 }
                if frame < monoWords.count { expected += Float(monoWords[frame]) / 32768 }
                guard played[channel][frame] == expected else {
                    Issue.record("channel \(channel) frame \(frame): \(played[channel][frame]), expected \(expected)")
                    return
                }
            }
        }
        #expect(next.load(ordering: .relaxed) > blocks.count, "every block was enqueued")
    }
}
