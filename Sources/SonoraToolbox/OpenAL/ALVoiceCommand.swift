/// What the API tells a source's voice on the render side (through the context's
/// lock-free queue, applied at the start of a render cycle, a batch at a time).
enum ALVoiceCommand: BitwiseCopyable {
    /// The voice's queue is now `entries` (nil: no buffers), first entry numbered `firstSequence`.
    case queue(voice: Int, entries: UnsafePointer<ALQueueEntry>?, count: Int, firstSequence: Int)
    /// Start (play, or a new offset while playing or paused) at entry `sequence`, buffer frame
    /// `frame`; `running` false leaves it paused there. `generation` tells this start's
    /// published position and end from those of earlier starts.
    case start(voice: Int, generation: Int, sequence: Int, frame: Double, running: Bool)
    /// Pause (false) or resume (true) where it is.
    case run(voice: Int, Bool)
    /// Stop or rewind: no position any more.
    case halt(voice: Int)
    case looping(voice: Int, Bool)
    /// The part of pitch × doppler the mixer unit's playback rate cannot take (outside 0.5…2).
    case rateScale(voice: Int, Double)
    /// Effect slot `slot` (a mixer auxiliary bus) now runs `effect` (nil: none) at `gain`.
    case effectSlot(slot: Int, effect: UnsafeMutablePointer<ALEffectRenderState>?, gain: Float)
}

/// One effect slot as the render side sees it.
struct ALSlotRenderState {
    var effect: UnsafeMutablePointer<ALEffectRenderState>?
    var gain: Float = 1
}
