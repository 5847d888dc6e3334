import SonoraCore

/// A whole-sample delay: each sample comes out `delay` frames after it went in.
///
/// The history lives in a ring allocated once by `init` (not realtime-safe); `process` only
/// copies. The ring is longer than `maximumDelay` by a block's worth of slack, so a block
/// moves through it in a few contiguous copies instead of sample by sample. The history is
/// kept whatever the delay, so lengthening the delay plays samples that really were input.
///
/// Copies of a `DelayLine` share one ring: use a copy on one thread at a time, and keep
/// one copy per signal.
public struct DelayLine: @unchecked Sendable {
    /// Owns the ring, so it is freed when the last copy goes; `process` never touches it
    /// (it uses `ring` below), so rendering does no reference counting.
    @usableFromInline let storage: DelayLineStorage
    @usableFromInline let ring: UnsafeMutablePointer<Float>
    @usableFromInline let capacity: Int
    /// Where the next input sample goes.
    @usableFromInline var writeIndex = 0
    @usableFromInline var delayFrames = 0
    public let maximumDelay: Int

    /// A delay line of up to `frames` frames (negative counts as 0), starting at delay 0 with
    /// silent history. Allocates: call it off the realtime thread.
    public init(maximumDelay frames: Int) {
        maximumDelay = max(frames, 0)
        // The slack keeps each contiguous copy (at most capacity − delay frames) at least 1024
        // frames long even at the maximum delay, where a ring of exactly maximumDelay + 1
        // would go one sample at a time.
        capacity = maximumDelay + 1024
        storage = DelayLineStorage(capacity: capacity)
        ring = storage.pointer
    }

    /// In frames, clamped to 0…maximumDelay.
    @inlinable
    public var delay: Int {
        get { delayFrames }
        set { delayFrames = min(max(newValue, 0), maximumDelay) }
    }

    /// Delays `count` samples in place.
    @inlinable
    public mutating func process(_ samples: UnsafeMutablePointer<Float>, count: Int) {
        var done = 0
        var write = writeIndex
        var read = write &- delayFrames
        if read < 0 { read &+= capacity }
        while done < count {
            // A run wraps neither index. Its input goes into the ring before its output is
            // read, so a delay shorter than the run reads this run's own input, correctly;
            // what must not happen is writing over history the run has yet to read, hence
            // run ≤ capacity − delay.
            // Pairwise min: the variadic min(_:_:_:_:) builds an array (a heap call) per call.
            let run = min(min(count &- done, capacity &- write), min(capacity &- read, capacity &- delayFrames))
            copySamples(from: samples + done, to: ring + write, count: run)
            if delayFrames > 0 {
                copySamples(from: ring + read, to: samples + done, count: run)
            }
            done &+= run
            write &+= run
            if write == capacity { write = 0 }
            read &+= run
            if read == capacity { read = 0 }
        }
        writeIndex = write
    }

    /// Silences the history, as if only zeros had ever been input.
    @inlinable
    public mutating func reset() {
        ring.update(repeating: 0, count: capacity)
        writeIndex = 0
    }
}

/// Owner of a `DelayLine`'s ring: allocated zeroed once, freed with the last copy.
@usableFromInline
final class DelayLineStorage: @unchecked Sendable {
    @usableFromInline let pointer: UnsafeMutablePointer<Float>

    init(capacity: Int) {
        pointer = .allocate(capacity: capacity)
        pointer.initialize(repeating: 0, count: capacity)
    }

    deinit {
        pointer.deallocate()
    }
}
