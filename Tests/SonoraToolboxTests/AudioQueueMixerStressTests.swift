import Foundation
import SonoraCore
import SonoraHAL
import SonoraTestSupport
import SonoraToolbox
import Testing

/// The mixer's lock-free hand-over under load (and under ThreadSanitizer, `make tsan`): a
/// timer-paced device renders on its own thread while queues join, start, pause, stop,
/// change their decode buffer (a new render side while the device keeps rendering the
/// others) and leave, from two program threads at once.
@Suite("Queues join and leave a running mixer", .serialized)
struct AudioQueueMixerStressTests {
    func queue(channels: Int) throws -> AudioQueue {
        try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: channels, sample: .float32)) { _, _ in }
    }

    @Test("two threads join, play and leave queues while the device renders; a steady queue keeps playing throughout")
    func joinAndLeaveWhileRendering() throws {
        let device = try TimerDevice(configuration: AudioDeviceConfiguration(
            sampleRate: 48000, periodFrames: 64, inputChannels: 0, outputChannels: 2, realtimePriority: nil), mode: .null)
        defer { device.stop() }
        let output = try AudioQueueOutput(device: device)
        // A steady queue keeps the device running the whole time.
        let steady = try queue(channels: 2)
        defer { try? steady.dispose(immediate: true) }
        try steady.setDecodeBufferSizeFrames(65536)
        try steady.setOutput(output)
        try enqueue([Float](repeating: 0.1, count: 2 * 60000), on: steady)
        try steady.prime()
        try steady.start()

        let failures = Recorder()
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            do {
                let queues = try (0..<3).map { try queue(channels: 1 + ($0 + worker) % 2) }
                defer { queues.forEach { try? $0.dispose(immediate: true) } }
                for round in 0..<15 {
                    for (index, queue) in queues.enumerated() {
                        // A new render side while the device renders the other queues.
                        try queue.setDecodeBufferSizeFrames(512 << ((round + index) % 3))
                        try queue.setOutput(output)
                        try enqueue([Float](repeating: 0.05, count: 300 * Int(queue.format.channelsPerFrame)), on: queue)
                        try queue.prime()
                        if (round + index) % 2 == 0 { try queue.start() } else { try queue.start(atHostTime: HostTime.now + 2_000_000) }
                    }
                    usleep(2000)
                    try queues[0].pause()
                    usleep(1000)
                    try queues[0].start()
                    for queue in queues {
                        try queue.stop(immediate: true)
                        try queue.setOutput(nil)
                    }
                }
            } catch {
                failures.note("thread \(worker): \(error)")
            }
        }
        #expect(steady.isRunning && output.isRunning && output.queueCount == 1)
        #expect(steady.underruns == 0)
        #expect(failures.notes.isEmpty, "\(failures.notes)")
    }
}
