import SonoraCore
import Testing

/// The sample ring's copying calls at small, odd chunks across many wraps: every frame comes
/// out once, in order, on its own channel; partial writes and reads return exactly what fit;
/// the in-place regions and the copying calls interleave on the same cursors.
@Suite("SampleRing at small chunks")
struct SampleRingSmallChunkTests {
    /// Sample of `channel` at stream frame `frame`: unique per channel and frame.
    static func sample(_ frame: Int, _ channel: Int) -> Float { Float(frame * 8 + channel) }

    @Test(arguments: [1, 2, 3])
    func oddChunksAcrossManyWrapsKeepEveryFrameInOrder(channels: Int) throws {
        let ring = try SampleRing(channelCount: channels, capacity: 64)
        let source = try OwnedAudioBufferList(channelCount: channels, frameCapacity: 64)
        let destination = try OwnedAudioBufferList(channelCount: channels, frameCapacity: 64)
        let writeSizes = [1, 3, 5, 7, 32, 13, 64, 2]
        let readSizes = [2, 9, 4, 32, 31, 1, 64]
        var written = 0
        var read = 0
        var step = 0
        while read < 64 * 60 {
            // Producer: a chunk, or what fits of it (the call says how much it took).
            let wanted = writeSizes[step % writeSizes.count]
            let free = ring.writableFrames
            for channel in 0..<channels {
                for frame in 0..<wanted { source.list.samples(channel)[frame] = Self.sample(written + frame, channel) }
            }
            let took: Int
            if step % 5 == 4 {
                // Every fifth chunk through the region API, committed.
                let region = ring.writeRegion(maxFrames: wanted)
                for channel in 0..<channels {
                    for frame in 0..<region.first.frameCount {
                        region.first.samples(channel)[frame] = Self.sample(written + frame, channel)
                    }
                    for frame in 0..<region.second.frameCount {
                        region.second.samples(channel)[frame] = Self.sample(written + region.first.frameCount + frame, channel)
                    }
                }
                try ring.commitWrite(region.frameCount)
                took = region.frameCount
            } else {
                took = ring.write(from: source.list.frames(from: 0, count: wanted))
            }
            #expect(took == min(wanted, free), "write \(step): took \(took) of \(wanted) with \(free) free")
            written += took

            // Consumer: a chunk, or what is there.
            let asked = readSizes[(step * 3) % readSizes.count]
            let filled = ring.readableFrames
            let got = ring.read(into: destination.list.frames(from: 0, count: asked))
            #expect(got == min(asked, filled), "read \(step): got \(got) of \(asked) with \(filled) filled")
            for channel in 0..<channels {
                for frame in 0..<got where destination.list.samples(channel)[frame] != Self.sample(read + frame, channel) {
                    Issue.record("frame \(read + frame) channel \(channel): \(destination.list.samples(channel)[frame])")
                    return
                }
            }
            read += got
            step += 1
        }
        #expect(ring.readableFrames == written - read)
    }

    @Test func aChunkThatEndsExactlyAtTheWrapLeavesNoSecondSpan() throws {
        let ring = try SampleRing(channelCount: 2, capacity: 32)
        let chunk = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 32)
        let out = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 32)
        for lap in 0..<4 {
            for frame in 0..<32 {
                chunk.list.samples(0)[frame] = Float(lap * 100 + frame)
                chunk.list.samples(1)[frame] = -Float(lap * 100 + frame)
            }
            #expect(ring.write(from: chunk.list) == 32)
            #expect(ring.write(from: chunk.list) == 0, "full")
            #expect(ring.readRegion().second.frameCount == 0)
            #expect(ring.read(into: out.list) == 32)
            #expect(ring.read(into: out.list) == 0, "empty")
            #expect(out.list.samples(0)[31] == Float(lap * 100 + 31) && out.list.samples(1)[0] == -Float(lap * 100))
        }
    }

    /// The copying calls take a list's frame offset (a view into a longer buffer) on both sides,
    /// in one span and across the wrap, and touch no frame outside the view.
    @Test func viewsWithAFrameOffsetCopyOnlyTheirFrames() throws {
        let ring = try SampleRing(channelCount: 2, capacity: 16)
        let source = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 32)
        let destination = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 32)
        for channel in 0..<2 {
            for frame in 0..<32 { source.list.samples(channel)[frame] = Self.sample(frame, channel) }
        }
        let guardValue: Float = -1
        var streamed = 0
        // 10 frames a lap into a 16-frame ring: laps 1, 3 and 4 wrap.
        for lap in 0..<6 {
            destination.list.samples(0).update(repeating: guardValue, count: 32)
            destination.list.samples(1).update(repeating: guardValue, count: 32)
            let from = 3 + lap
            #expect(ring.write(from: source.list.frames(from: from, count: 10)) == 10)
            #expect(ring.read(into: destination.list.frames(from: 7, count: 10)) == 10)
            for channel in 0..<2 {
                let samples = destination.list.samples(channel)
                for frame in 0..<32 {
                    let expected = (7..<17).contains(frame) ? Self.sample(from + frame - 7, channel) : guardValue
                    #expect(samples[frame] == expected, "lap \(lap) channel \(channel) frame \(frame)")
                }
            }
            streamed += 10
        }
        #expect(ring.readableFrames == 0 && streamed == 60)
    }
}
