import Foundation
import SonoraCore
import SonoraFile
import SonoraToolbox

/// What an input queue's callback received: each buffer's bytes, start time and descriptions,
/// in order; the callback re-enqueues the buffer (the reference recording pattern).
final class InputRecording: @unchecked Sendable {
    struct Delivery {
        var bytes: [UInt8]
        var startTime: Int
        var descriptions: [AudioStreamPacketDescription]
    }
    private let lock = NSLock()
    private var list: [Delivery] = []
    var reenqueue = true

    func callback(_ queue: AudioInputQueue, _ buffer: AudioQueueBuffer, _ startTime: Int, _ descriptions: [AudioStreamPacketDescription]) {
        lock.lock()
        list.append(Delivery(bytes: buffer.bytes, startTime: startTime, descriptions: descriptions))
        let again = reenqueue
        lock.unlock()
        if again { try? queue.enqueue(buffer) }
    }

    var deliveries: [Delivery] { lock.lock(); defer { lock.unlock() }; return list }
    var allBytes: [UInt8] { deliveries.flatMap(\.bytes) }
}

/// An input queue recording in `format` into `recording`, with `count` buffers enqueued.
func inputQueue(
    _ format: StreamFormat, recording: InputRecording, buffers count: Int = 3, byteCapacity: Int, descriptions: Int = 0
) throws -> AudioInputQueue {
    let queue = try AudioInputQueue(format: format) { recording.callback($0, $1, $2, $3) }
    for _ in 0..<count {
        try queue.enqueue(try queue.allocateBuffer(byteCapacity: byteCapacity, packetDescriptionCapacity: descriptions))
    }
    return queue
}

/// Interleaved samples every one of which a 16-bit integer holds exactly (k / 32768),
/// a tone plus seeded noise: what a 16-bit input delivers.
func sixteenBitSignal(frames: Int, channels: Int, seed: UInt64 = 0x5EED) -> [Float] {
    var state = seed
    return (0..<frames * channels).map { index in
        state = state &* 6364136223846793005 &+ 1442695040888963407
        let noise = Int(Int16(truncatingIfNeeded: state >> 40)) / 16
        let tone = Int(9000 * sin(Double(index / channels) * 0.021 * Double(index % channels + 1)))
        return Float(max(-32768, min(32767, tone + noise))) / 32768
    }
}

func int16Bytes(_ samples: [Float]) -> [UInt8] {
    samples.map { Int16($0 * 32768) }.withUnsafeBytes { Array($0) }
}
