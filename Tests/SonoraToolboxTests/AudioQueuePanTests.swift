import Foundation
import SonoraCore
import SonoraToolbox
import Testing

/// kAudioQueueParam_Pan on a stereo queue is a balance: centred, both channels play as they
/// are; towards one side, only the other side is turned down (to silence at ±1).
@Suite("AudioQueue pan")
struct AudioQueuePanTests {
    @Test("pan 0 leaves both channels unchanged; −0.5 halves the right; 1 silences the left", arguments: [
        (Float(0), Float(1), Float(1)), (-0.5, 1, 0.5), (1, 0, 1), (0.25, 0.75, 1),
    ])
    func balance(pan: Float, left: Float, right: Float) throws {
        let queue = try monoFloatQueue(channels: 2, recorder: Recorder())
        defer { try? queue.dispose(immediate: true) }
        try queue.setParameter(.pan, pan)
        try enqueue([Float](repeating: 0.5, count: 2 * 256), on: queue)
        try queue.prime()
        try queue.start()
        let output = try render(queue, frames: 256, slice: 64)
        #expect(stride(from: 0, to: output.count, by: 2).allSatisfy { output[$0] == 0.5 * left }, "left \(output[0])")
        #expect(stride(from: 1, to: output.count, by: 2).allSatisfy { output[$0] == 0.5 * right }, "right \(output[1])")
    }
}
