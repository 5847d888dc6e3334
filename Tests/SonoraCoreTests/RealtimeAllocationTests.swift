import SonoraCore
import SonoraTestSupport
import Testing

/// The realtime side of every ring and queue must not touch the heap.
@Suite("No allocation on the realtime path", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct RealtimeAllocationTests {
    @Test func theCounterSeesAllocations() {
        AllocationCounter.begin()
        let array = [Int](repeating: 7, count: Int.random(in: 100...200))
        let calls = AllocationCounter.end()
        #expect(array.count >= 100)
        #expect(calls >= 1)
    }

    @Test func ringAndQueueOperationsDoNotAllocate() throws {
        let samples = try SampleRing(channelCount: 2, capacity: 512)
        let bytes = try ByteRing(capacity: 4096, mirrored: true)
        let queue = try MessageQueue<AudioTimeStamp>(capacity: 64)
        let source = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 100)
        let destination = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 100)
        let raw = UnsafeMutableRawBufferPointer.allocate(byteCount: 300, alignment: 16)
        defer { raw.deallocate() }

        func cycle(_ index: Int) throws {
            _ = samples.write(from: source.list)
            let region = samples.writeRegion(maxFrames: 30)
            region.first.clear()
            region.second.clear()
            try samples.commitWrite(region.frameCount)
            _ = samples.read(into: destination.list)
            try samples.commitRead(samples.readRegion(maxFrames: 30).frameCount)
            _ = bytes.write(UnsafeRawBufferPointer(raw))
            _ = bytes.read(into: raw)
            queue.push(AudioTimeStamp(sampleTime: Double(index)))
            _ = queue.pop()
            _ = HostTime.now
        }
        for index in 0..<100 { try cycle(index) }  // warm up: first calls may instantiate metadata

        AllocationCounter.begin()
        for index in 0..<10_000 { try cycle(index) }
        let calls = AllocationCounter.end()
        #expect(calls == 0, "\(calls) heap calls in 10,000 cycles")
    }
}
