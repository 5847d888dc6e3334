import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import SonoraToolbox
import SonoraUnits
import Testing

/// Play rate live, through an I/O unit on a scripted device (its cycles run on the test's
/// thread): the rate stage keeps only its look-ahead in the ring, the render side makes no
/// heap call, and the stream at rate 2 plays an octave up in half the frames, per channel.
@Suite("AudioQueue play rate on a device", .serialized)
struct AudioQueuePlayRateDeviceTests {
    @Test("stereo at rate 2 on a device: each channel an octave up, half the frames, ring within the look-ahead, no heap call")
    func rateOnDevice() throws {
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .float32)
        let queue = try AudioQueue(format: format) { _, _ in }
        defer { try? queue.dispose(immediate: true) }
        let device = try PlayedTap(channels: 2, capacity: 48000 * 2)
        let io = IOUnit()
        try io.setDevice(device)
        try queue.setOutputUnit(io)
        try queue.setTimePitchEnabled(true)
        try queue.setParameter(.playRate, 2)
        // Warm-up round, not counted: every path (start, play, the end) runs once first, as
        // the allocation counter's rule says (a first call may instantiate runtime metadata).
        try enqueue([Float](repeating: 0, count: 2 * 400), on: queue)
        try queue.prime()
        try queue.start()
        try queue.stop(immediate: false)
        try queue.prime()
        for _ in 0..<4 {
            try device.run(cycles: 1)
            try queue.prime()
        }
        for _ in 0..<5000 where queue.isRunning { usleep(1000) }
        let warmFrames = device.frames
        let timeline = try queue.createTimeline()
        let left = TestSignal.sine(frequency: 1000, sampleRate: 48000, count: 30000, amplitude: 0.5)
        let right = TestSignal.sine(frequency: 1500, sampleRate: 48000, count: 30000, amplitude: 0.5)
        for start in stride(from: 0, to: 30000, by: 5000) {
            try enqueue((start..<(start + 5000)).flatMap { [left[$0], right[$0]] }, on: queue)
        }
        try queue.prime()
        try queue.start()
        try queue.stop(immediate: false)
        var largestReady = try queue.prime()
        device.countsAllocations = true
        for _ in 0..<80 {
            try device.run(cycles: 1)
            // A period's wait, as a real device gives the queue's thread.
            largestReady = max(largestReady, try queue.prime())
        }
        #expect(!queue.isRunning)
        #expect(queue.underruns == 0)
        #expect(timeline.currentTime().sampleTime == 15000)
        #expect(largestReady <= 2048, "the ring held \(largestReady) frames ahead")
        let played = device.played.map { Array($0.dropFirst(warmFrames)) }
        let leftFrequency = SignalMeasurement.frequency(of: Array(played[0][300..<14700]), sampleRate: 48000)
        let rightFrequency = SignalMeasurement.frequency(of: Array(played[1][300..<14700]), sampleRate: 48000)
        #expect(abs(leftFrequency - 2000) < 0.5 && abs(rightFrequency - 3000) < 0.5, "\(leftFrequency) Hz, \(rightFrequency) Hz")
        #expect(played[0][15000...].allSatisfy { $0 == 0 })
        #expect(device.allocations == 0, "\(device.allocations) heap calls in the I/O cycles")
    }
}
