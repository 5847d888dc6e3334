import Foundation
import SonoraCore
import SonoraTestSupport
import SonoraToolbox
import Testing

/// The capture side, called as a device's input thread calls it, makes no heap call while the
/// queue starts (now, or at a sample time), records, meters, overruns (no buffer enqueued), pauses and stops.
@Suite("No allocation on an input queue's capture side", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct AudioInputQueueAllocationTests {
    @Test func captureSideMakesNoHeapCalls() throws {
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        let recording = InputRecording()
        let queue = try AudioInputQueue(format: format, ringFrames: 1024) { recording.callback($0, $1, $2, $3) }
        for _ in 0..<3 { try queue.enqueue(try queue.allocateBuffer(byteCapacity: 4000)) }
        defer { try? queue.dispose() }
        let storage = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 256)
        let list = storage.list(frameCount: 256)
        let tone = TestSignal.sine(frequency: 440, sampleRate: 48000, count: 256, amplitude: 0.5)
        for frame in 0..<256 { list[0][frame] = tone[frame]; list[1][frame] = -tone[frame] }
        let capturer = queue.capturer
        try queue.setLevelMeteringEnabled(true)
        try queue.start()
        for _ in 0..<20 { capturer.capture(list) }  // warm up
        let warmed = 20
        try queue.flush()

        var heapCalls = 0
        // The first of the six 200-slice rounds warms every path up (a resume at a sample time
        // makes one-time runtime allocations the first time it runs); the other five are counted.
        for index in 0..<1200 {
            switch index % 200 {
            case 50: try queue.pause()
            // Resumes at a sample time two slices on, mid-slice (each slice is 256 frames from 0).
            case 70: try queue.start(atDeviceSampleTime: (warmed + index + 2) * 256 + 100)
            case 120: recording.reenqueue = false  // the buffers run out: the ring overruns
            case 180: try queue.setLevelMeteringEnabled(index % 400 < 200)
            default: break
            }
            AllocationCounter.begin()
            capturer.capture(list)
            let made = AllocationCounter.end()
            if index >= 200 { heapCalls += made }
            if index % 200 == 170 {
                recording.reenqueue = true
                for _ in 0..<3 { try queue.enqueue(try queue.allocateBuffer(byteCapacity: 4000)) }
            }
            // Without buffers nothing drains the ring: it fills, and the capture side drops.
            if !(120..<170).contains(index % 200) { try queue.flush() }
        }
        try queue.stop(immediate: true)
        AllocationCounter.begin()
        capturer.capture(list)  // stopped
        heapCalls += AllocationCounter.end()
        #expect(capturer.overruns > 0)
        #expect(!recording.deliveries.isEmpty)
        #expect(heapCalls == 0)
    }
}
