/// A value that moves linearly to a target over a number of frames: a gain or parameter ramp.
///
/// Each value is computed from its frame index, `start + (target − start) · k / frames`,
/// rather than by adding a step repeatedly, so a long ramp ends exactly where it should and
/// a ramp gives the same samples however it is split into blocks.
public struct LinearRamp: Sendable {
    @usableFromInline var start: Float
    @usableFromInline var end: Float
    /// Frames of the ramp already produced; the ramp is over when it reaches `length`.
    @usableFromInline var position: Int = 0
    @usableFromInline var length: Int = 0

    @inlinable
    public init(value: Float) {
        start = value
        end = value
    }

    /// The value of the next sample.
    @inlinable
    public var value: Float {
        position < length ? valueAt(position) : end
    }

    /// Where the ramp ends (the current value when not ramping).
    @inlinable
    public var target: Float { end }

    @inlinable
    public var isRamping: Bool { position < length }

    /// Frames until the ramp reaches its target (0 when not ramping).
    @inlinable
    public var remainingFrames: Int { length - position }

    /// Jumps to `value`, cancelling any ramp.
    @inlinable
    public mutating func set(_ value: Float) {
        start = value
        end = value
        position = 0
        length = 0
    }

    /// Ramps from `start` (the current value when nil) to `target` over `frames` frames;
    /// `frames` ≤ 0 jumps to `target`.
    @inlinable
    public mutating func ramp(from start: Float? = nil, to target: Float, frames: Int) {
        guard frames > 0 else {
            set(target)
            return
        }
        self.start = start ?? value
        end = target
        position = 0
        length = frames
    }

    /// Moves the ramp on by `frames` without producing samples.
    @inlinable
    public mutating func advance(frames: Int) {
        guard frames > 0 else { return }
        // Compared, not added first, so a huge `frames` cannot overflow.
        position = frames >= length - position ? length : position + frames
    }

    /// The value for the next sample; then advances by one frame.
    @inlinable
    public mutating func next() -> Float {
        guard position < length else { return end }
        let result = valueAt(position)
        position &+= 1
        return result
    }

    /// Multiplies `count` samples by the ramp, one value per sample, and advances past them.
    @inlinable
    public mutating func applyGain(to samples: UnsafeMutablePointer<Float>, count: Int) {
        guard count > 0 else { return }
        var done = 0
        if position < length {
            let ramped = min(count, length - position)
            let first = start, delta = end - start
            let frames = Float(length), offset = position
            while done < ramped {
                // The exact expression of `valueAt`, so block and per-sample results agree.
                samples[done] *= first + delta * Float(offset &+ done) / frames
                done &+= 1
            }
            position &+= ramped
        }
        // Multiplying by exactly 1 changes nothing, so skip it.
        if done < count && end != 1 {
            Mixing.scale(samples + done, count: count &- done, by: end)
        }
    }

    @inlinable
    func valueAt(_ frame: Int) -> Float {
        start + (end - start) * Float(frame) / Float(length)
    }
}
