import SonoraCore
import Testing

@Suite("Buffer lists")
struct BufferListTests {
    @Test func ownedBuffersAreAlignedZeroedAndSeparate() throws {
        let owned = try OwnedAudioBufferList(channelCount: 3, frameCapacity: 100)
        let list = owned.list
        #expect(list.channelCount == 3 && list.frameCount == 100)
        #expect(owned.channelStride == 112)
        for channel in 0..<3 {
            #expect(Int(bitPattern: list.samples(channel)) % 64 == 0)
            #expect(list[channel].allSatisfy { $0 == 0 })
        }
        list[1].update(repeating: 0.5)
        #expect(list[0].allSatisfy { $0 == 0 } && list[2].allSatisfy { $0 == 0 })
        #expect(list[1].allSatisfy { $0 == 0.5 })
    }

    @Test func viewsSliceCopyAndClearWithoutCopyingStorage() throws {
        let owned = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 16)
        let list = owned.list
        for channel in 0..<2 {
            for frame in 0..<16 { list[channel][frame] = Float(channel * 100 + frame) }
        }
        let middle = list.frames(from: 4, count: 8)
        #expect(middle.frameCount == 8 && middle.frameOffset == 4)
        #expect(middle[1][0] == 104 && middle[1][7] == 111)
        #expect(middle.samples(0) == list.samples(0) + 4)

        let other = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 8)
        other.list.copy(from: middle)
        #expect(Array(other.list[0]) == (4..<12).map(Float.init))
        middle.clear()
        #expect(list[0][3] == 3 && list[0][4] == 0 && list[0][11] == 0 && list[0][12] == 12)
        #expect(owned.list(frameCount: 5).frameCount == 5)
    }

    @Test(arguments: [1, 3, 7, 8, 9, 31, 64, 255, 256, 1000])
    func copySamplesMovesExactlyCount(_ count: Int) {
        let source = (0..<(count + 4)).map { Float($0) + 0.25 }
        var destination = [Float](repeating: -1, count: count + 4)
        source.withUnsafeBufferPointer { from in
            destination.withUnsafeMutableBufferPointer { to in
                copySamples(from: from.baseAddress! + 1, to: to.baseAddress! + 2, count: count)
            }
        }
        #expect(destination[0] == -1 && destination[1] == -1)
        #expect(Array(destination[2..<(count + 2)]) == Array(source[1..<(count + 1)]))
        #expect(destination[count + 2] == -1)
    }

    @Test func badSizesAreErrorsNotCrashes() {
        let error = #expect(throws: AudioError.self) { try OwnedAudioBufferList(channelCount: 0, frameCapacity: 16) }
        #expect(error?.code == .parameterError)
        #expect(throws: AudioError.self) { try OwnedAudioBufferList(channelCount: 2, frameCapacity: -1) }
        let huge = #expect(throws: AudioError.self) { try OwnedAudioBufferList(channelCount: 1 << 20, frameCapacity: 1 << 40) }
        #expect(huge?.code == .memoryFull)
    }
}
