import Foundation
import SonoraCore
import SonoraHAL
import SonoraTestSupport
import SonoraToolbox
import Testing

/// A reset while paused on a device (a player's seek: pause, reset, new buffers, resume): the
/// new buffers play from the first frame after the resume, with no frame of the old ones.
@Suite("AudioQueue reset while paused on a device", .serialized)
struct AudioQueueResetWhilePausedTests {
    /// The old buffer is longer than the decode ring, so the ring is full of its frames when
    /// the reset comes: the new buffer's frames must still be there for the first slice.
    @Test("pause, reset, enqueue, resume: the next frame out is the new buffer's first")
    func resetWhilePaused() throws {
        try playResetAndResume(oldFrames: 16384, stopAfterQueued: false)
    }

    /// The old stream is shorter than the ring and stops after its buffers, so its end mark has
    /// reached the render side before the reset (a player's whole file in its ring, then a seek):
    /// that end belongs to the dropped stream, and the new buffer must still play after the resume.
    @Test("an end sent before the reset (stop after queued, the whole stream in the ring) does not end the new buffers")
    func resetAfterEndWasSent() throws {
        try playResetAndResume(oldFrames: 2048, stopAfterQueued: true)
    }

    /// Plays `oldFrames` stereo frames for 1,024 (4 cycles of 256), pauses, resets, enqueues
    /// 1,024 new frames and resumes: the first 1,024 frames out are the old buffer's, the next
    /// 1,024 the new one's, and the queue still runs. With `stopAfterQueued`, the old stream
    /// is told to stop after its buffers before it starts (its end mark is sent once the whole
    /// buffer is in the ring).
    private func playResetAndResume(oldFrames: Int, stopAfterQueued: Bool) throws {
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let output = try AudioQueueOutput(device: tap)
        let queue = try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 2, sample: .float32)) { _, _ in }
        defer { try? queue.dispose(immediate: true) }
        try queue.setOutput(output)
        let old = (0..<oldFrames * 2).map { Float($0 % 100 + 1) / 1024 }
        let new = (0..<1024 * 2).map { -Float($0 % 50 + 1) / 1024 }
        try enqueue(old, on: queue)
        if stopAfterQueued { try queue.stop(immediate: false) }
        try queue.prime()
        try queue.start()
        try tap.run(cycles: 4)
        try queue.pause()
        try queue.reset()
        try enqueue(new, on: queue)
        try queue.prime()
        try queue.start()
        try tap.run(cycles: 4)
        let left = tap.played[0]
        #expect(Array(left.prefix(1024)) == stride(from: 0, to: 2048, by: 2).map { old[$0] })
        #expect(Array(left[1024..<2048]) == stride(from: 0, to: 2048, by: 2).map { new[$0] }, "\(Array(left[1024..<1030]))")
        #expect(queue.isRunning)
    }
}
