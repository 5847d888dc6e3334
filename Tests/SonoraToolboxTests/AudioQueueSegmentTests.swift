import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import SonoraToolbox
import SonoraUnits
import Synchronization
import Testing

/// Live, a linear PCM buffer is played by the render side from where the program put it (no
/// decode ring): it comes back only once played, the joins are gapless, the gains and a reset
/// apply as on the ring's frames, and the render side makes no heap call.
@Suite("AudioQueue buffers played in place on a live output", .serialized)
struct AudioQueueSegmentTests {
    static func words(frames: Int, channels: Int, seed: Int) -> [Int16] {
        (0..<frames * channels).map { Int16(($0 * 53 + seed * 211) % 6007 - 3000) }
    }

    @Test("a buffer comes back only after its last frame is played; refilled buffers join without a gap, exactly; no heap call in the cycles")
    func comesBackAfterPlayed() throws {
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let output = try AudioQueueOutput(device: tap)
        let stereo = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        // 6 blocks of 700 frames (not a multiple of the 256-frame period), 2 buffers refilled.
        let blocks = (0..<6).map { Self.words(frames: 700, channels: 2, seed: $0) }
        let next = Atomic<Int>(2)
        let returned = Atomic<Int>(0)
        let queue = try AudioQueue(format: stereo) { queue, buffer in
            returned.wrappingAdd(1, ordering: .relaxed)
            let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
            guard index < blocks.count else { return }
            buffer.fill(with: blocks[index].withUnsafeBytes { Array($0) })
            try? queue.enqueue(buffer)
        }
        defer { try? queue.dispose(immediate: true) }
        try queue.setOutput(output)
        for index in 0..<2 {
            let buffer = try queue.allocateBuffer(byteCapacity: 700 * 4)
            buffer.fill(with: blocks[index].withUnsafeBytes { Array($0) })
            try queue.enqueue(buffer)
        }
        #expect(try queue.prime() == 1400)
        #expect(returned.load(ordering: .relaxed) == 0, "primed buffers stay with the queue until played")
        try queue.start()
        // Warm-up cycle (a first call may instantiate runtime metadata), then counted.
        try tap.run(cycles: 1)
        _ = try queue.prime()
        #expect(returned.load(ordering: .relaxed) == 0, "256 of the first buffer's 700 frames played")
        tap.countsAllocations = true
        try tap.run(cycles: 2)  // 768 frames: the first buffer is done
        _ = try queue.prime()
        #expect(returned.load(ordering: .relaxed) == 1)
        for _ in 0..<16 {
            try tap.run(cycles: 1)
            _ = try queue.prime()
        }
        tap.countsAllocations = false
        #expect(tap.allocations == 0, "\(tap.allocations) heap calls in the I/O cycles")
        let expected = blocks.flatMap { $0 }
        let played = tap.played
        for channel in 0..<2 {
            for frame in 0..<(19 * 256) {
                let value: Float = frame < 4200 ? Float(expected[frame * 2 + channel]) / 32768 : 0
                guard played[channel][frame] == value else {
                    Issue.record("channel \(channel) frame \(frame): \(played[channel][frame]), expected \(value)")
                    return
                }
            }
        }
        #expect(returned.load(ordering: .relaxed) == 6)
        #expect(queue.underruns > 0)  // after the last block, not before: the frames above are exact
    }

    @Test("volume, pan and a buffer's parameter events apply to buffers played in place as to the ring's frames")
    func gainsMatchTheRingPath() throws {
        // The same buffers offline (through the ring) and live (in place) give the same frames.
        let stereo = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        let blocks = (0..<3).map { Self.words(frames: 1000, channels: 2, seed: $0 + 20) }
        func feed(_ queue: AudioQueue) throws {
            try queue.setParameter(.volumeRampTime, 0.005)
            try queue.setParameter(.volume, 0.5)
            try queue.setParameter(.pan, -0.25)
            for (index, block) in blocks.enumerated() {
                let buffer = try queue.allocateBuffer(byteCapacity: block.count * 2)
                buffer.fill(with: block.withUnsafeBytes { Array($0) })
                try queue.enqueue(buffer, parameterEvents: index == 1 ? [AudioQueueParameterEvent(.volume, 0.8)] : [])
            }
        }
        let offline = try AudioQueue(format: stereo) { _, _ in }
        defer { try? offline.dispose(immediate: true) }
        try offline.setOfflineRenderFormat(.canonical(sampleRate: 48000, channels: 2))
        try feed(offline)
        try offline.start()
        let reference = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 3072)
        try offline.offlineRender(into: reference.list(frameCount: 3072))

        let tap = try PlayedTap(channels: 2, capacity: 4096)
        let output = try AudioQueueOutput(device: tap)
        let live = try AudioQueue(format: stereo) { _, _ in }
        defer { try? live.dispose(immediate: true) }
        try live.setOutput(output)
        try feed(live)
        try live.prime()
        try live.start()
        for _ in 0..<12 {
            try tap.run(cycles: 1)
            _ = try live.prime()
        }
        let played = tap.played
        let list = reference.list(frameCount: 3072)
        for channel in 0..<2 {
            #expect(Array(played[channel].prefix(3072)) == Array(list[channel]), "channel \(channel)")
        }
    }

    @Test("reset while the render side holds buffers: they come back, and the next buffer plays from its first frame")
    func resetTakesBuffersBack() throws {
        let tap = try PlayedTap(channels: 1, capacity: 48000)
        let output = try AudioQueueOutput(device: tap)
        let mono = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .int16)
        let returned = Atomic<Int>(0)
        let queue = try AudioQueue(format: mono) { _, _ in returned.wrappingAdd(1, ordering: .relaxed) }
        defer { try? queue.dispose(immediate: true) }
        try queue.setOutput(output)
        for seed in 0..<3 {
            let buffer = try queue.allocateBuffer(byteCapacity: 2000 * 2)
            buffer.fill(with: Self.words(frames: 2000, channels: 1, seed: seed).withUnsafeBytes { Array($0) })
            try queue.enqueue(buffer)
        }
        try queue.prime()
        try queue.start()
        try tap.run(cycles: 3)
        _ = try queue.prime()
        #expect(returned.load(ordering: .relaxed) == 0)
        try queue.pause()
        try tap.run(cycles: 1)
        try queue.reset()
        #expect(returned.load(ordering: .relaxed) == 3, "every buffer back after the reset")
        let fresh = Self.words(frames: 600, channels: 1, seed: 9)
        let buffer = try queue.allocateBuffer(byteCapacity: 600 * 2)
        buffer.fill(with: fresh.withUnsafeBytes { Array($0) })
        try queue.enqueue(buffer)
        try queue.prime()
        let resumeAt = tap.frames
        try queue.start()
        for _ in 0..<4 {
            try tap.run(cycles: 1)
            _ = try queue.prime()
        }
        let played = Array(tap.played[0].dropFirst(resumeAt))
        #expect(Array(played.prefix(600)) == fresh.map { Float($0) / 32768 })
        #expect(played.dropFirst(600).allSatisfy { $0 == 0 })
        #expect(returned.load(ordering: .relaxed) == 4)
    }
}
