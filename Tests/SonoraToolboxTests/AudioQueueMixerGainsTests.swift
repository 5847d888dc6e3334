import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import SonoraToolbox
import Testing

/// A mixer source adds straight from its ring (gains applied to the ring's frames in place,
/// through the channel pointers the renderer holds) unless it meters, when it renders into a
/// scratch first: both ways must give the same sum, bit for bit, with volume ramps, pan, a
/// parameter event mid-stream and reads across the ring's wrap.
@Suite("Queues mixed on one device: gains straight from the ring", .serialized)
struct AudioQueueMixerGainsTests {
    /// Waits (bounded; nothing is asserted about time) for the queue's thread to catch up.
    func waitUntil(_ condition: () -> Bool) {
        for _ in 0..<5000 where !condition() { usleep(1000) }
    }

    /// Samples in small multiples of 1/1024, different per channel and seed.
    func samples(frames: Int, channels: Int, seed: Int) -> [Float] {
        (0..<frames * channels).map { Float(($0 * 7 + seed * 13) % 61 - 30) / 1024 }
    }

    /// A stereo and a mono queue (volume ramps, pan, a volume event in the third buffer),
    /// started off the period grid so a slice reads across the ring's wrap; what the device
    /// played, and the heap calls in its cycles.
    func play(metering: Bool) throws -> (played: [[Float]], allocations: Int, underruns: [Int]) {
        let device = try PlayedTap(channels: 2, capacity: 16384)
        let output = try AudioQueueOutput(device: device)
        let recorders = [Recorder(), Recorder()]
        let queues = try [2, 1].enumerated().map { index, channels in
            try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: channels, sample: .float32)) { _, buffer in recorders[index].add(buffer) }
        }
        defer { queues.forEach { try? $0.dispose(immediate: true) } }
        for (index, queue) in queues.enumerated() {
            try queue.setOutput(output)
            try queue.setLevelMeteringEnabled(metering)
            try queue.setParameter(.volumeRampTime, 0.01)
            try queue.setParameter(.volume, 0.5)
            if index == 0 { try queue.setParameter(.pan, -0.5) }
            // Four buffers of 3,000 frames: the ring (three quarters of 8,192 filled) holds two
            // at first; the others come as it is read.
            for part in 0..<4 {
                let events = part == 2 ? [AudioQueueParameterEvent(.volume, 0.75)] : []
                try enqueue(samples(frames: 3000, channels: Int(queue.format.channelsPerFrame), seed: part + index * 4), on: queue, events: events)
            }
            try queue.prime()
        }
        for queue in queues { try queue.start(atDeviceSampleTime: 100) }
        device.countsAllocations = true
        // Frames 0…4,095, then (the queues' threads refilling) …8,191, where a slice reads
        // across the ring's end at queue frame 8,192, then past the end of the 12,000.
        try device.run(cycles: 16)
        waitUntil { recorders.allSatisfy { $0.count >= 3 } }
        try device.run(cycles: 16)
        waitUntil { recorders.allSatisfy { $0.count >= 4 } }
        try device.run(cycles: 24)
        return (device.played, device.allocations, queues.map(\.underruns))
    }

    @Test("a stereo and a mono queue with volume ramps, pan and a volume event: the same sum straight from the ring as through a scratch, and no heap call")
    func sameSumEitherWay() throws {
        // A first run warms up what the process does once (type metadata, lazy globals), as
        // the other allocation tests' warm-up rounds; the runs compared come after it.
        _ = try play(metering: false)
        let direct = try play(metering: false)
        let scratch = try play(metering: true)
        #expect(direct.played.count == 2 && direct.played[0].count == 14336)
        for channel in 0..<2 {
            // Sound from the start time to the end of the 12,000 frames, then silence.
            #expect(direct.played[channel][100..<12100].contains { $0 != 0 })
            #expect(direct.played[channel] == scratch.played[channel], "channel \(channel)")
        }
        // The pan moved the stereo queue left: the channels differ.
        #expect(direct.played[0] != direct.played[1])
        #expect(direct.allocations == 0 && scratch.allocations == 0, "\(direct.allocations) / \(scratch.allocations) heap calls in the I/O cycles")
        // Each queue underran only after its last frame.
        #expect(direct.underruns == scratch.underruns)
    }
}
