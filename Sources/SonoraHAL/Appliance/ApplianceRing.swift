import SonoraCore
import Synchronization

/// A view of one stream's ring in shared memory: raw pointers only, so the realtime
/// thread copies it around without reference counting. The caller keeps the mapping
/// alive and decides which positions it trusts (the appliance trusts none it did not
/// write; see `ApplianceServerStream`).
@frozen
@usableFromInline
struct ApplianceRing: @unchecked Sendable, BitwiseCopyable {
    let base: UnsafeMutableRawPointer
    let channels: Int
    let capacity: Int

    init(base: UnsafeMutableRawPointer, channels: Int, capacity: Int) {
        self.base = base
        self.channels = channels
        self.capacity = capacity
    }

    var writePosition: UnsafeMutablePointer<Atomic<Int>> {
        (base + ApplianceStreamLayout.writerOffset).assumingMemoryBound(to: Atomic<Int>.self)
    }

    var readPosition: UnsafeMutablePointer<Atomic<Int>> {
        (base + ApplianceStreamLayout.readerOffset).assumingMemoryBound(to: Atomic<Int>.self)
    }

    @inline(__always)
    func samples(_ channel: Int) -> UnsafeMutablePointer<Float> {
        (base + ApplianceStreamLayout.dataOffset).assumingMemoryBound(to: Float.self) + channel * capacity
    }

    /// Copies `frames` frames of `source` (from `offset`) into the ring at `position`:
    /// ring channel c takes source channel c, or channel 0 when the source is mono, or
    /// silence when the source has no such channel. `frames` ≤ capacity.
    @inline(__always)
    func write(from source: AudioBufferList, offset: Int, frames: Int, at position: Int) {
        let slot = position & (capacity - 1)
        let first = min(frames, capacity - slot)
        for channel in 0..<channels {
            let ring = samples(channel)
            let from = source.channelCount == 1 ? 0 : channel
            if from < source.channelCount {
                let input = source.samples(from) + offset
                (ring + slot).update(from: input, count: first)
                if first < frames { ring.update(from: input + first, count: frames - first) }
            } else {
                (ring + slot).update(repeating: 0, count: first)
                if first < frames { ring.update(repeating: 0, count: frames - first) }
            }
        }
    }

    /// Copies `frames` frames from the ring at `position` into `destination` channel by
    /// channel (channels the ring lacks are left alone). `frames` ≤ capacity.
    @inline(__always)
    func read(into destination: AudioBufferList, frames: Int, at position: Int) {
        let slot = position & (capacity - 1)
        let first = min(frames, capacity - slot)
        for channel in 0..<min(channels, destination.channelCount) {
            let ring = samples(channel)
            let output = destination.samples(channel)
            output.update(from: ring + slot, count: first)
            if first < frames { (output + first).update(from: ring, count: frames - first) }
        }
    }
}
