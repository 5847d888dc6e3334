import Foundation
import SonoraCore
import SonoraTestSupport
import SonoraToolbox
import Testing

/// With time-pitch enabled and the rate changing (by call and by a buffer's event), the render
/// side still makes no heap call: the rate is converted on the queue's thread, before the ring.
@Suite("No allocation on a queue's render side with a play rate", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct AudioQueuePlayRateAllocationTests {
    @Test func renderSideMakesNoHeapCallsWithRate() throws {
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        let refill = SendableBox(true)
        let returned = SendableBox(0)
        let queue = try AudioQueue(format: format) { queue, buffer in
            guard refill.value else { return }
            // Every fifth buffer changes the rate (0.75, 1, 1.25, 1.5 in turn).
            returned.value += 1
            let events = returned.value % 5 == 0 ? [AudioQueueParameterEvent(.playRate, Float(returned.value % 4 + 3) / 4)] : []
            try? queue.enqueue(buffer, parameterEvents: events)
        }
        defer { try? queue.dispose(immediate: true) }
        try queue.setOfflineRenderFormat(.linearPCM(sampleRate: 48000, channels: 2, sample: .float32))
        try queue.setDecodeBufferSizeFrames(4096)
        try queue.setTimePitchEnabled(true)
        try queue.setParameter(.playRate, 1.5)
        let tone = TestSignal.sine(frequency: 440, sampleRate: 48000, count: 1000, amplitude: 0.5)
        for size in [997, 1000, 1003] {
            let buffer = try queue.allocateBuffer(byteCapacity: size * 4)
            let samples = (0..<size).flatMap { [Int16(tone[$0 % 1000] * 32767), Int16(-tone[$0 % 1000] * 32767)] }
            buffer.fill(with: samples.withUnsafeBytes { Array($0) })
            try queue.enqueue(buffer)
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
        for _ in 0..<20 {
            renderer.render(list)
            try queue.prime()
        }
        heapCalls = 0
        for index in 0..<1500 {
            if index % 300 == 100 { try queue.setParameter(.playRate, index % 600 == 100 ? 0.5 : 2) }
            cycle()
            try queue.prime()
        }
        #expect(list[0].contains { $0 != 0 })
        refill.value = false
        try queue.stop(immediate: false)
        for _ in 0..<60 {
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
