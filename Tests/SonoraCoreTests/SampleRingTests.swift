import SonoraCore
import Testing

@Suite("SampleRing")
struct SampleRingTests {
    @Test func capacityRoundsUpToAPowerOfTwo() throws {
        #expect(try SampleRing(channelCount: 2, capacity: 1000).capacity == 1024)
        #expect(try SampleRing(channelCount: 1, capacity: 1024).capacity == 1024)
        #expect(try SampleRing(channelCount: 1, capacity: 1).capacity == 1)
        #expect(try SampleRing(channelCount: 1, capacity: 3).capacity == 4)
    }

    @Test func invalidConstructionIsAnError() {
        for (channels, capacity) in [(0, 16), (2, 0), (2, -5), (1, (1 << 28) + 1)] {
            let error = #expect(throws: AudioError.self) { try SampleRing(channelCount: channels, capacity: capacity) }
            #expect(error?.code == .parameterError)
        }
    }

    @Test func emptyRingHasNothingToRead() throws {
        let ring = try SampleRing(channelCount: 2, capacity: 8)
        #expect(ring.readableFrames == 0)
        #expect(ring.writableFrames == 8)
        #expect(ring.readRegion().frameCount == 0)
        let destination = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 4)
        #expect(ring.read(into: destination.list) == 0)
    }

    @Test func fullRingTakesNoMore() throws {
        let ring = try SampleRing(channelCount: 1, capacity: 8)
        let source = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 12)
        #expect(ring.write(from: source.list) == 8)
        #expect(ring.writableFrames == 0 && ring.readableFrames == 8)
        #expect(ring.writeRegion().frameCount == 0)
        #expect(ring.write(from: source.list) == 0)
        #expect(ring.approximateFillLevel == 8)
    }

    @Test func regionsSplitAtTheWrapAndKeepOrder() throws {
        let ring = try SampleRing(channelCount: 2, capacity: 8)
        let scratch = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 8)
        // Move the positions to 6 so the next region wraps.
        #expect(ring.write(from: scratch.list(frameCount: 6)) == 6)
        #expect(ring.read(into: scratch.list(frameCount: 6)) == 6)

        let region = ring.writeRegion(maxFrames: 5)
        #expect(region.frameCount == 5)
        #expect(region.first.frameCount == 2 && region.first.frameOffset == 6)
        #expect(region.second.frameCount == 3 && region.second.frameOffset == 0)
        for channel in 0..<2 {
            for frame in 0..<2 { region.first[channel][frame] = Float(10 * channel + frame) }
            for frame in 0..<3 { region.second[channel][frame] = Float(10 * channel + frame + 2) }
        }
        try ring.commitWrite(5)

        let read = ring.readRegion()
        #expect(read.frameCount == 5 && read.first.frameCount == 2 && read.second.frameCount == 3)
        let out = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 5)
        #expect(ring.read(into: out.list) == 5)
        #expect(Array(out.list[0]) == [0, 1, 2, 3, 4])
        #expect(Array(out.list[1]) == [10, 11, 12, 13, 14])
        #expect(ring.readableFrames == 0)
    }

    @Test func partialRegionsAndPartialCommits() throws {
        let ring = try SampleRing(channelCount: 1, capacity: 16)
        let region = ring.writeRegion(maxFrames: 4)
        #expect(region.frameCount == 4 && region.second.frameCount == 0)
        region.first[0].update(repeating: 7)
        try ring.commitWrite(3)  // commit fewer than the region offered
        #expect(ring.readableFrames == 3)
        let readRegion = ring.readRegion(maxFrames: 2)
        #expect(readRegion.frameCount == 2 && readRegion.first[0][1] == 7)
        try ring.commitRead(1)
        #expect(ring.readableFrames == 2 && ring.writableFrames == 14)
        #expect(ring.writeRegion(maxFrames: 0).frameCount == 0)
        #expect(ring.writeRegion(maxFrames: -3).frameCount == 0)
    }

    @Test func committingMoreThanAvailableIsAnError() throws {
        let ring = try SampleRing(channelCount: 1, capacity: 4)
        let overWrite = #expect(throws: AudioError.self) { try ring.commitWrite(5) }
        #expect(overWrite?.code == .parameterError)
        #expect(overWrite?.message == "cannot write 5 slots: 4 available")
        let overRead = #expect(throws: AudioError.self) { try ring.commitRead(1) }
        #expect(overRead?.message == "cannot read 1 slots: 0 available")
        #expect(throws: AudioError.self) { try ring.commitWrite(-1) }
        // The failed commits changed nothing.
        #expect(ring.readableFrames == 0 && ring.writableFrames == 4)
    }
}
