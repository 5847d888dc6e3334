import Foundation
import SonoraCore
import SonoraTestSupport
import SonoraToolbox
import Testing

/// The render side, called as a device's I/O thread calls it, makes no heap call while the
/// queue starts, plays (volume ramps, pan, parameter events, metering), pauses, resumes,
/// underruns, reaches the end of a stop-after-queued stream and stops immediately.
@Suite("No allocation on a queue's render side", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct AudioQueueAllocationTests {
    @Test func renderSideMakesNoHeapCalls() throws {
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        let refill = SendableBox(true)
        let queue = try AudioQueue(format: format) { queue, buffer in
            // The reference pattern: the buffer goes straight back into the queue.
            guard refill.value else { return }
            try? queue.enqueue(buffer, parameterEvents: [AudioQueueParameterEvent(.pan, Float(buffer.byteSize % 3) - 1)])
        }
        defer { try? queue.dispose(immediate: true) }
        try queue.setOfflineRenderFormat(.linearPCM(sampleRate: 48000, channels: 2, sample: .float32))
        try queue.setDecodeBufferSizeFrames(4096)
        try queue.setLevelMeteringEnabled(true)
        try queue.setParameter(.volumeRampTime, 0.005)
        let tone = TestSignal.sine(frequency: 440, sampleRate: 48000, count: 1000, amplitude: 0.5)
        for size in [997, 1000, 1003] {
            let buffer = try queue.allocateBuffer(byteCapacity: size * 4)
            let samples = (0..<size).flatMap { [Int16(tone[$0 % 1000] * 32767), Int16(-tone[$0 % 1000] * 32767)] }
            buffer.fill(with: samples.withUnsafeBytes { Array($0) })
            try queue.enqueue(buffer, parameterEvents: [AudioQueueParameterEvent(.volume, Float(size % 7 + 3) / 10)])
        }
        let storage = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 256)
        let list = storage.list(frameCount: 256)
        let renderer = queue.renderer

        var heapCalls = 0
        func cycle() {
            AllocationCounter.begin()
            renderer.render(list)
            heapCalls += AllocationCounter.end()
        }
        try queue.prime()
        try queue.start()
        for _ in 0..<20 { renderer.render(list) }  // warm up every path before counting
        heapCalls = 0

        for index in 0..<2000 {
            switch index % 400 {
            case 50: try queue.setParameter(.volume, Float(index % 10 + 1) / 10)
            case 100: try queue.setParameter(.pan, Float(index % 3) - 1)
            case 150: try queue.pause()
            case 170: try queue.start()
            case 390: try queue.setLevelMeteringEnabled(index % 800 < 400)
            default: break
            }
            cycle()
            // The queue's thread keeps up, as a device period gives it time to (except while
            // it sleeps for an underrun: 30 cycles, 7,680 frames, more than the 4,096-frame ring).
            if !(250..<280).contains(index % 400) { try queue.prime() }
        }
        #expect(queue.underruns > 0)
        #expect(list[0].contains { $0 != 0 })
        // The end of a stop-after-queued stream, then an immediate stop.
        refill.value = false
        try queue.stop(immediate: false)
        for _ in 0..<40 {
            cycle()
            _ = try queue.prime()
        }
        #expect(!queue.isRunning)
        try queue.start()
        for _ in 0..<5 { cycle() }
        try queue.stop(immediate: true)
        for _ in 0..<5 { cycle() }
        #expect(heapCalls == 0, "\(heapCalls) heap calls on the render side")
    }
}
