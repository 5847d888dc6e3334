/// A lock-free single-producer / single-consumer ring of non-interleaved Float
/// samples, `channelCount` channels, power-of-two capacity in frames.
///
/// Producers and consumers work in place: `writeRegion` / `readRegion` hand out
/// the free or filled frames as at most two `AudioBufferList` spans (the second
/// is non-empty only at the wrap), which a unit can render into or read from
/// directly; `commitWrite` / `commitRead` publish the work. `write(from:)` and
/// `read(into:)` are copying conveniences over the same calls.
///
/// Exactly one thread may produce and one consume; neither blocks, allocates or locks.
public final class SampleRing: @unchecked Sendable {
    public let channelCount: Int
    /// Frames the ring holds (the requested capacity rounded up to a power of two).
    public let capacity: Int
    @usableFromInline let mask: Int
    @usableFromInline let cursors: RingCursors
    /// Channel storage, reached from the hot path only through `channels` so that
    /// neither side retains or releases the shared owner (its reference count would
    /// bounce between the producer's and the consumer's cores).
    private let buffers: OwnedAudioBufferList
    @usableFromInline let channels: UnsafePointer<UnsafeMutablePointer<Float>>
    /// Floats each channel's storage has beyond the capacity (unused), so that the channels of a
    /// power-of-two capacity do not start a multiple of 4 KiB apart, where the same frame of every
    /// channel shares its L1 set and its low twelve address bits. 256 bytes (a 4 KiB page holds 16
    /// such steps): in `sonora-bench ring` at 32-frame stereo chunks the sample ring went from
    /// 0.83–0.94 to 0.92–1.00 of the interleaved byte ring's throughput, level at 256 and 4096
    /// (BENCHMARKS.md, ring section, "2026-11-28 late").
    static let channelStagger = 64

    /// A ring of at least `capacity` frames (rounded up to a power of two, at most 2²⁸).
    /// `zeroed: false`: the channel storage is left unwritten (see `OwnedAudioBufferList`), for
    /// an owner that may keep its frames elsewhere under these cursors; frames are read only
    /// after they were written, as always.
    public init(channelCount: Int, capacity: Int, zeroed: Bool = true) throws(AudioError) {
        guard channelCount > 0 else {
            throw AudioError(.parameterError, "a sample ring needs at least one channel, not \(channelCount)")
        }
        self.capacity = try ringCapacity(capacity, limit: 1 << 28, what: "sample ring")
        self.channelCount = channelCount
        mask = self.capacity - 1
        buffers = try OwnedAudioBufferList(
            channelCount: channelCount, frameCapacity: self.capacity + Self.channelStagger, zeroed: zeroed)
        channels = UnsafePointer(buffers.channelPointers)
        cursors = RingCursors()
    }

    deinit { cursors.deallocate() }

    // MARK: Producer

    /// Frames the producer can write now. The producer's thread only: it refreshes the
    /// producer's cached read position (any other thread: `approximateFillLevel`).
    @inlinable
    public var writableFrames: Int { cursors.producerView(wanted: capacity, capacity: capacity).free }

    /// Up to `maxFrames` free frames to write into, in place.
    @inlinable
    public func writeRegion(maxFrames: Int = .max) -> SampleRingRegion {
        let (position, free) = cursors.producerView(wanted: maxFrames, capacity: capacity)
        return region(at: position, count: min(max(maxFrames, 0), free))
    }

    /// Publishes `frames` written into the region (never more than were free).
    @inlinable
    public func commitWrite(_ frames: Int) throws(AudioError) {
        let (position, free) = cursors.producerView(wanted: frames, capacity: capacity)
        guard frames >= 0 && frames <= free else { throw overcommit("write", frames, available: free) }
        cursors.publishWrite(position + frames)
    }

    /// Copies as many of `source`'s frames as fit; returns the number written.
    ///
    /// One look at the cursors and straight channel copies: no region is built, since at
    /// small chunks the per-call bookkeeping, not the copy, is what a ring costs. Always
    /// inlined: as a call (the optimizer declines the body across modules) the caller's
    /// loop reloads the ring's fields and pays the call, about a third of a 32-frame write.
    @inlinable @inline(__always)
    public func write(from source: AudioBufferList) -> Int {
        precondition(source.channelCount == channelCount, "source has \(source.channelCount) channels, ring \(channelCount)")
        let (position, free) = cursors.producerView(wanted: source.frameCount, capacity: capacity)
        let count = min(source.frameCount, free)
        guard count > 0 else { return 0 }
        let start = position & mask
        let firstCount = min(count, capacity &- start)
        let channels = self.channels
        let sources = source.channelPointers
        let offset = source.frameOffset
        if firstCount == count {
            for channel in 0..<channelCount {
                ringCopy(from: sources[channel] + offset, to: channels[channel] + start, count: count)
            }
        } else {
            for channel in 0..<channelCount {
                let from = sources[channel] + offset
                ringCopy(from: from, to: channels[channel] + start, count: firstCount)
                ringCopy(from: from + firstCount, to: channels[channel], count: count &- firstCount)
            }
        }
        cursors.publishWrite(position &+ count)
        return count
    }

    // MARK: Consumer

    /// Frames the consumer can read now. The consumer's thread only: it refreshes the
    /// consumer's cached write position, a race from any other thread (the producer knows
    /// the fill as `capacity - writableFrames`; anyone else, `approximateFillLevel`).
    @inlinable
    public var readableFrames: Int { cursors.consumerView(wanted: capacity).filled }

    /// Whether more than `frames` frames are readable now. Looks at the producer's position
    /// only when the consumer's copy of it does not already show more (the position only
    /// grows), where `readableFrames` always looks — a load of the line the producer's core
    /// writes, a miss each time for a consumer that asks every cycle.
    @inlinable
    public func readableFrames(exceed frames: Int) -> Bool {
        cursors.consumerView(wanted: frames &+ 1).filled > frames
    }

    /// Up to `maxFrames` filled frames to read, in place.
    @inlinable
    public func readRegion(maxFrames: Int = .max) -> SampleRingRegion {
        let (position, filled) = cursors.consumerView(wanted: maxFrames)
        return region(at: position, count: min(max(maxFrames, 0), filled))
    }

    /// Releases `frames` read from the region back to the producer.
    @inlinable
    public func commitRead(_ frames: Int) throws(AudioError) {
        let (position, filled) = cursors.consumerView(wanted: frames)
        guard frames >= 0 && frames <= filled else { throw overcommit("read", frames, available: filled) }
        cursors.publishRead(position + frames)
    }

    /// Copies up to `destination.frameCount` frames out; returns the number read
    /// (inlined, as `write(from:)`).
    @inlinable @inline(__always)
    public func read(into destination: AudioBufferList) -> Int {
        precondition(destination.channelCount == channelCount, "destination has \(destination.channelCount) channels, ring \(channelCount)")
        let (position, filled) = cursors.consumerView(wanted: destination.frameCount)
        let count = min(destination.frameCount, filled)
        guard count > 0 else { return 0 }
        let start = position & mask
        let firstCount = min(count, capacity &- start)
        let channels = self.channels
        let destinations = destination.channelPointers
        let offset = destination.frameOffset
        if firstCount == count {
            for channel in 0..<channelCount {
                ringCopy(from: channels[channel] + start, to: destinations[channel] + offset, count: count)
            }
        } else {
            for channel in 0..<channelCount {
                let to = destinations[channel] + offset
                ringCopy(from: channels[channel] + start, to: to, count: firstCount)
                ringCopy(from: channels[channel], to: to + firstCount, count: count &- firstCount)
            }
        }
        cursors.publishRead(position &+ count)
        return count
    }

    /// Where the consumer's lines lie — its cursors' line (its position, its copy of the
    /// producer's) and the table of channel pointers — for an owner that loads them ahead of
    /// reading (a mixer before a slice over many rings, so their misses overlap). Addresses
    /// only: nothing is read or written through them here.
    public var consumerLines: (cursors: UnsafeRawPointer, channels: UnsafeRawPointer) {
        (UnsafeRawPointer(cursors.base + RingCursors.lineSize), UnsafeRawPointer(channels))
    }

    /// Filled frames as seen from any thread: a snapshot for meters and logs.
    public var approximateFillLevel: Int { cursors.approximateCount() }

    /// The two spans of `count` frames from `position`; the bounds hold by construction
    /// (`count` never exceeds what the cursors allow), so no range is checked again.
    @inlinable
    func region(at position: Int, count: Int) -> SampleRingRegion {
        let start = position & mask
        let firstCount = min(count, capacity &- start)
        return SampleRingRegion(
            first: AudioBufferList(channels: channels, channelCount: channelCount, frameCount: firstCount, frameOffset: start),
            second: AudioBufferList(channels: channels, channelCount: channelCount, frameCount: count &- firstCount))
    }
}

/// Frames of a `SampleRing` handed to one side: `first`, then `second` (empty unless the region wraps).
@frozen
public struct SampleRingRegion: @unchecked Sendable, BitwiseCopyable {
    public let first: AudioBufferList
    public let second: AudioBufferList

    @inlinable
    init(first: AudioBufferList, second: AudioBufferList) {
        self.first = first
        self.second = second
    }

    @inlinable public var frameCount: Int { first.frameCount + second.frameCount }
}

/// One channel's span in or out of the ring: libc's memmove, which picks the machine's
/// widest moves (32-byte AVX where there is AVX) — an inline Swift loop is held to 16-byte
/// SSE moves by the baseline target and measured slower at every chunk size from 32 frames.
@inlinable @inline(__always)
func ringCopy(from source: UnsafeMutablePointer<Float>, to destination: UnsafeMutablePointer<Float>, count: Int) {
    UnsafeMutableRawPointer(destination).copyMemory(from: source, byteCount: count &* 4)
}
