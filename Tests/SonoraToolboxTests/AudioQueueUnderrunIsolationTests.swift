import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import SonoraToolbox
import Testing

/// An underrun is the late queue's own: on a shared device it plays silence for that queue,
/// is counted and marks its timeline, and every other queue plays on sample for sample.
@Suite("An underrun on a shared device", .serialized)
struct AudioQueueUnderrunIsolationTests {
    /// Interleaved stereo, multiples of 1/1024 (sums exact in Float).
    func samples(frames: Int, seed: Int) -> [Float] {
        (0..<frames * 2).map { Float(($0 * 5 + seed * 11) % 53 - 26) / 1024 }
    }

    @Test("a starved queue underruns alone: the other's samples come out exact through it, and the starved one resumes with its next buffer")
    func starvedQueueDoesNotGlitchTheOthers() throws {
        let device = try PlayedTap(channels: 2, capacity: 48000)
        let output = try AudioQueueOutput(device: device)
        let recorder = Recorder()
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .float32)
        let steady = try AudioQueue(format: format) { _, buffer in recorder.add(buffer) }
        let late = try AudioQueue(format: format) { _, buffer in recorder.add(buffer) }
        defer { [steady, late].forEach { try? $0.dispose(immediate: true) } }
        let steadySamples = samples(frames: 4096, seed: 1)
        let lateFirst = samples(frames: 512, seed: 2), lateSecond = samples(frames: 512, seed: 3)
        for queue in [steady, late] { try queue.setOutput(output) }
        try enqueue(steadySamples, on: steady)
        try enqueue(lateFirst, on: late)
        let steadyTimeline = try steady.createTimeline(), lateTimeline = try late.createTimeline()
        for queue in [steady, late] {
            try queue.prime()
            try queue.start()
        }
        // 2,048 frames: the late queue runs dry after 512 and stays dry.
        try device.run(cycles: 8)
        #expect(late.underruns > 0 && lateTimeline.currentTime().discontinuity)
        #expect(steady.underruns == 0 && !steadyTimeline.currentTime().discontinuity)
        // Its next buffer (late) plays from the next cycle on, beside the steady queue.
        try enqueue(lateSecond, on: late)
        try late.prime()
        let resumedAt = device.played[0].count
        try device.run(cycles: 8)
        #expect(steady.underruns == 0, "the steady queue never ran dry while it had frames")
        for channel in 0..<2 {
            let played = device.played[channel]
            for frame in 0..<4096 {
                var expected = steadySamples[frame * 2 + channel]
                if frame < 512 { expected += lateFirst[frame * 2 + channel] }
                if frame >= resumedAt && frame < resumedAt + 512 { expected += lateSecond[(frame - resumedAt) * 2 + channel] }
                guard played[frame] == expected else {
                    Issue.record("channel \(channel) frame \(frame): \(played[frame]), expected \(expected) (late queue resumed at \(resumedAt))")
                    return
                }
            }
        }
    }
}
