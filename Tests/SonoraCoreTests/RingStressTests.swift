import Foundation
import SonoraCore
import SonoraTestSupport
import Testing

/// Two threads push 10⁸ samples (or bytes) through each ring in chunks of varying
/// size, the consumer checking every value against the sequence the producer
/// wrote: nothing may be lost, duplicated or reordered. Also run under
/// ThreadSanitizer by `make test`. SONORA_STRESS_SAMPLES overrides the count.
@Suite("Ring stress, two threads", .serialized)
struct RingStressTests {
    static let sampleCount = ProcessInfo.processInfo.environment["SONORA_STRESS_SAMPLES"].flatMap(Int.init) ?? 100_000_000

    /// A pseudo-random but reproducible value for (position, channel): a float in
    /// [1, 2) whose 23 mantissa bits come from a hash, so a shifted or repeated
    /// chunk cannot match by accident.
    @inline(__always)
    static func value(_ position: Int, _ channel: Int) -> Float {
        let hash = UInt32(truncatingIfNeeded: (position &+ channel &* 0x9E37_79B9) &* 0x85EB_CA6B)
        return Float(bitPattern: 0x3F80_0000 | (hash >> 9))
    }

    @inline(__always)
    static func byte(_ position: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: value(position, 0).bitPattern >> 3)
    }

    final class Outcome: @unchecked Sendable {
        var moved = 0
        var checksum: UInt64 = 0
        var firstMismatch: Int? = nil
    }

    @Test func sampleRingLosesDuplicatesAndReordersNothing() throws {
        let channels = 2
        let frames = Self.sampleCount / channels
        let ring = try SampleRing(channelCount: channels, capacity: 1024)
        let produced = Outcome()
        let consumed = Outcome()

        let producer = try RealtimeThread(RealtimeThreadOptions(name: "stress-producer", priority: nil)) {
            var sizes = SeededGenerator(seed: 0x1234_5678)
            var position = 0
            var checksum: UInt64 = 0
            while position < frames {
                let region = ring.writeRegion(maxFrames: min(Int.random(in: 1...700, using: &sizes), frames - position))
                if region.frameCount == 0 {
                    sched_yield()
                    continue
                }
                for (span, start) in [(region.first, position), (region.second, position + region.first.frameCount)] {
                    for channel in 0..<channels {
                        let samples = span.samples(channel)
                        for frame in 0..<span.frameCount {
                            let value = Self.value(start + frame, channel)
                            samples[frame] = value
                            checksum &+= UInt64(value.bitPattern)
                        }
                    }
                }
                try! ring.commitWrite(region.frameCount)
                position += region.frameCount
            }
            produced.moved = position
            produced.checksum = checksum
        }
        let consumer = try RealtimeThread(RealtimeThreadOptions(name: "stress-consumer", priority: nil)) {
            var sizes = SeededGenerator(seed: 0x9876_5432)
            var position = 0
            var checksum: UInt64 = 0
            var mismatch: Int? = nil
            while position < frames {
                let region = ring.readRegion(maxFrames: Int.random(in: 1...700, using: &sizes))
                if region.frameCount == 0 {
                    sched_yield()
                    continue
                }
                for (span, start) in [(region.first, position), (region.second, position + region.first.frameCount)] {
                    for channel in 0..<channels {
                        let samples = span.samples(channel)
                        for frame in 0..<span.frameCount {
                            let value = samples[frame]
                            checksum &+= UInt64(value.bitPattern)
                            if mismatch == nil, value != Self.value(start + frame, channel) { mismatch = start + frame }
                        }
                    }
                }
                try! ring.commitRead(region.frameCount)
                position += region.frameCount
            }
            consumed.moved = position
            consumed.checksum = checksum
            consumed.firstMismatch = mismatch
        }
        producer.join()
        consumer.join()
        #expect(produced.moved == frames && consumed.moved == frames)
        #expect(consumed.firstMismatch == nil, "first wrong frame: \(consumed.firstMismatch ?? -1)")
        #expect(consumed.checksum == produced.checksum)
        #expect(ring.readableFrames == 0)
    }

    @Test func byteRingLosesDuplicatesAndReordersNothing() throws {
        let total = Self.sampleCount
        let ring = try ByteRing(capacity: 4096)
        let produced = Outcome()
        let consumed = Outcome()

        let producer = try RealtimeThread(RealtimeThreadOptions(name: "stress-producer", priority: nil)) {
            var sizes = SeededGenerator(seed: 0xABCD_EF01)
            var position = 0
            var checksum: UInt64 = 0
            while position < total {
                let region = ring.writeRegion(maxBytes: min(Int.random(in: 1...3000, using: &sizes), total - position))
                if region.count == 0 {
                    sched_yield()
                    continue
                }
                for (span, start) in [(region.first, position), (region.second, position + region.first.count)] {
                    for index in 0..<span.count {
                        let value = Self.byte(start + index)
                        span[index] = value
                        checksum &+= UInt64(value)
                    }
                }
                try! ring.commitWrite(region.count)
                position += region.count
            }
            produced.moved = position
            produced.checksum = checksum
        }
        let consumer = try RealtimeThread(RealtimeThreadOptions(name: "stress-consumer", priority: nil)) {
            var sizes = SeededGenerator(seed: 0x1357_9BDF)
            var position = 0
            var checksum: UInt64 = 0
            var mismatch: Int? = nil
            while position < total {
                let region = ring.readRegion(maxBytes: Int.random(in: 1...3000, using: &sizes))
                if region.count == 0 {
                    sched_yield()
                    continue
                }
                for (span, start) in [(region.first, position), (region.second, position + region.first.count)] {
                    for index in 0..<span.count {
                        let value = span[index]
                        checksum &+= UInt64(value)
                        if mismatch == nil, value != Self.byte(start + index) { mismatch = start + index }
                    }
                }
                try! ring.commitRead(region.count)
                position += region.count
            }
            consumed.moved = position
            consumed.checksum = checksum
            consumed.firstMismatch = mismatch
        }
        producer.join()
        consumer.join()
        #expect(produced.moved == total && consumed.moved == total)
        #expect(consumed.firstMismatch == nil, "first wrong byte: \(consumed.firstMismatch ?? -1)")
        #expect(consumed.checksum == produced.checksum)
    }

    struct Sequenced: BitwiseCopyable {
        var sequence: Int
        var payload: Float
    }

    @Test func messageQueueDeliversEveryMessageOnceInOrder() throws {
        let total = Self.sampleCount / 10
        let queue = try MessageQueue<Sequenced>(capacity: 256)
        let consumed = Outcome()
        let producer = try RealtimeThread(RealtimeThreadOptions(name: "stress-producer", priority: nil)) {
            var sequence = 0
            while sequence < total {
                if queue.push(Sequenced(sequence: sequence, payload: Self.value(sequence, 1))) {
                    sequence += 1
                } else {
                    sched_yield()
                }
            }
        }
        let consumer = try RealtimeThread(RealtimeThreadOptions(name: "stress-consumer", priority: nil)) {
            var expected = 0
            var mismatch: Int? = nil
            while expected < total {
                guard let message = queue.pop() else {
                    sched_yield()
                    continue
                }
                if mismatch == nil, message.sequence != expected || message.payload != Self.value(expected, 1) {
                    mismatch = expected
                }
                expected += 1
            }
            consumed.moved = expected
            consumed.firstMismatch = mismatch
        }
        producer.join()
        consumer.join()
        #expect(consumed.moved == total)
        #expect(consumed.firstMismatch == nil, "first wrong message: \(consumed.firstMismatch ?? -1)")
        #expect(queue.pop() == nil)
    }
}
