import Foundation
import SonoraCore

/// A live queue on a shared output is refilled by the output's one feeder thread
/// (QueueFeeder) rather than by its own: the render side wakes the feeder, which runs the
/// queue's passes — decoding into the ring and the buffer callbacks — beside the other
/// queues there. The queue's own thread stays for control calls, listeners, and for
/// queues whose callbacks go to a dispatch queue the program gave (its own run loop:
/// `.dispatchQueue`), which keep their own thread for refills too.
extension AudioQueue {
    /// Whether the output's feeder may serve this queue (callbacks on the queue's thread).
    var feedsFromOutput: Bool {
        if case .queueThread = callbackContext { return true }
        return false
    }

    /// Joins `output`'s feeder (after the queue was attached to its mix).
    func joinFeeder(of output: AudioQueueOutput) {
        guard feedsFromOutput else { return }
        let feeder = output.feeder
        _ = try? withLock { self.feeder = feeder }
        // Renderer replacements (setDecodeBufferSizeFrames) happen only while stopped, under
        // `passLock`; this too is a stopped queue's call.
        renderer.feeder = Unmanaged.passUnretained(feeder)
        renderer.wakesFeeder.pointee.store(true, ordering: .releasing)
        feeder.add(self)
    }

    /// Back to the queue's own thread for refills (leaving an output, or the feeder stalled
    /// on this queue). `waiting`: return only once the feeder no longer runs a pass of it.
    func leaveFeeder(_ feeder: QueueFeeder, waiting: Bool) {
        let mine = (try? withLock { () -> Bool in
            guard self.feeder === feeder else { return false }
            self.feeder = nil
            return true
        }) ?? false
        guard mine else { return }
        renderer.wakesFeeder.pointee.store(false, ordering: .releasing)
        if waiting { feeder.remove(self) }
        // Whatever the feeder had not done yet, the queue's own thread does now.
        worker.wake()
    }
}
