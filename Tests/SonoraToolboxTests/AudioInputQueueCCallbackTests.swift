import Foundation
import SonoraCore
import SonoraToolbox
import Testing

/// The C-convention callback with user data (AudioQueueNewInput's form): the program's state
/// comes back as the user data, and each buffer is re-enqueued from C-style code.
@Suite("Input queue C callback")
struct AudioInputQueueCCallbackTests {
    final class State {
        var bytes: [UInt8] = []
        var startTimes: [Int] = []
        var descriptionCounts: [Int] = []
    }

    @Test func userDataQueueAndBufferComeBack() throws {
        let state = State()
        let handleInputBuffer: AudioQueueInputCallback = { userData, queuePointer, bufferPointer, startTime, packetCount, _ in
            let state = Unmanaged<State>.fromOpaque(userData!).takeUnretainedValue()
            let buffer = AudioQueueBuffer.from(bufferPointer)
            state.bytes += buffer.bytes
            state.startTimes.append(startTime)
            state.descriptionCounts.append(packetCount)
            try? AudioInputQueue.from(queuePointer).enqueue(buffer)
        }
        let format = StreamFormat.linearPCM(sampleRate: 8000, channels: 1, sample: .float32)
        let queue = try AudioInputQueue(format: format, callback: handleInputBuffer, userData: Unmanaged.passUnretained(state).toOpaque())
        defer { try? queue.dispose() }
        for _ in 0..<2 { try queue.enqueue(try queue.allocateBuffer(byteCapacity: 400)) }
        let samples = (0..<450).map { Float($0) / 450 }
        try queue.start()
        try queue.offlineCapture(frames: samples, sliceFrames: 64)
        try queue.stop(immediate: false)
        withExtendedLifetime(state) {
            #expect(state.bytes == samples.withUnsafeBytes { Array($0) })
            #expect(state.startTimes == [0, 100, 200, 300, 400])
            #expect(state.descriptionCounts.allSatisfy { $0 == 0 })
        }
    }
}
