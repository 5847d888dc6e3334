import Foundation
import SonoraCore
import SonoraTestSupport
import SonoraToolbox
import Testing

@Suite("AudioQueue reset, flush, prime, listeners")
struct AudioQueueResetTests {
    @Test("reset drops what is queued and decoded, hands every buffer back, and keeps the queue running")
    func resetWhileRunning() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        try queue.setDecodeBufferSizeFrames(256)
        for start in stride(from: 1, through: 801, by: 200) { try enqueue(numbered(start...(start + 199)), on: queue) }
        try queue.prime()
        try queue.start()
        #expect(try render(queue, frames: 100) == numbered(1...100))
        let before = recorder.count
        try queue.reset()
        #expect(recorder.count == 5)  // the three not yet decoded and the one half in the ring, too
        #expect(before < 5)
        #expect(queue.isRunning)
        try enqueue(numbered(5001...5050), on: queue)
        try queue.stop(immediate: false)
        let after = try render(queue, frames: 100)
        #expect(Array(after.prefix(50)) == numbered(5001...5050))
        #expect(after.dropFirst(50).allSatisfy { $0 == 0 })
        #expect(!queue.isRunning)
    }

    @Test("prime decodes ahead and says how many frames are ready; flush decodes all that is queued")
    func primeAndFlush() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        try enqueue(numbered(1...300), on: queue)
        try enqueue(numbered(301...500), on: queue)
        #expect(try queue.prime(frames: 100) == 100)
        #expect(try queue.prime() == 500)
        #expect(recorder.count == 2)
        try enqueue(numbered(501...600), on: queue)
        try queue.flush()
        #expect(try queue.prime() == 600)
    }

    @Test("the IsRunning listener fires on start and on the end; a removed listener does not")
    func listeners() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        let values = SendableBox<[Bool]>([])
        let removedCalls = SendableBox(0)
        try queue.addPropertyListener(.isRunning) { queue, property in
            #expect(property == .isRunning)
            values.value.append(queue.isRunning)
        }
        let token = try queue.addPropertyListener(.isRunning) { _, _ in removedCalls.value += 1 }
        try queue.removePropertyListener(.isRunning, token: token)
        let metering = SendableBox(0)
        try queue.addPropertyListener(.enableLevelMetering) { _, _ in metering.value += 1 }
        try enqueue(numbered(1...10), on: queue)
        try queue.start()
        try queue.setLevelMeteringEnabled(true)
        try queue.stop(immediate: false)
        _ = try render(queue, frames: 20)
        #expect(values.value == [true, false])
        #expect(removedCalls.value == 0)
        #expect(metering.value == 1)
    }
}
