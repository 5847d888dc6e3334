import Synchronization

/// Tells the realtime side when control inputs may have moved, so that a render copies the
/// parameter values into the plugin's port floats only then — not every render (a plugin
/// with 50 controls paid 50 ramp reads per render for values that had not changed).
///
/// Every parameter change reaches a unit through `scheduleParameter`, which pushes the event
/// and then calls `parameterWasScheduled`; there the control side raises the span (the
/// longest buffer offset + ramp seen) and bumps the epoch (release). The realtime side that
/// sees a new epoch (acquire) copies every slice for the span plus two cycles: the event is
/// applied in this cycle or the next, and its ramp then runs `duration` frames.
struct LV2ControlChanges: @unchecked Sendable, BitwiseCopyable {
    let base: UnsafeMutablePointer<Atomic<Int>>

    /// The two words live at `words` (16 bytes, owned by the caller): the LV2 unit puts them
    /// at the start of its run block, on the line the plain slice reads first (`LV2RunState.Block`).
    init(at words: UnsafeMutableRawPointer) {
        base = words.bindMemory(to: Atomic<Int>.self, capacity: 2)
        base.initialize(to: Atomic(0))
        (base + 1).initialize(to: Atomic(0))
    }

    func deinitialize() {
        base.deinitialize(count: 2)
    }

    /// Changes announced so far.
    var epoch: Int { base.pointee.load(ordering: .acquiring) }

    /// The longest offset + ramp ever scheduled, in frames.
    var span: Int { (base + 1).pointee.load(ordering: .relaxed) }

    /// Control side, after the change's event was sent (any thread: the span only grows).
    func announce(span frames: Int) {
        var current = span
        while frames > current {
            let (exchanged, original) = (base + 1).pointee.compareExchange(
                expected: current, desired: frames, ordering: .relaxed)
            if exchanged { break }
            current = original
        }
        base.pointee.add(1, ordering: .releasing)
    }
}
