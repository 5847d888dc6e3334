import SonoraCore

/// The compact state a steady cycle walks (`RenderPlan.renderSteady`).
///
/// Measured (BENCHMARKS.md, graph): a steady cycle that reaches each step's unit through its
/// object, its `RealtimeCore`, its input lists and its ramps touches about a dozen cache lines
/// per unit, dependent loads one after another, and 64 units' worth (~48 KB) does not stay in
/// L1 from one cycle to the next. A unit whose kernel can run from a few values instead gets
/// one 64-byte slot in a plan-owned array in render order: which kernel, its buffers' channel
/// pointers and its parameter values. The steady cycle walks that array linearly and never
/// touches the unit's object or core.
///
/// The slots are filled on the realtime side at the end of a full cycle in which every step
/// was lean (the cycle that makes the next one steady), from each unit's core. That is exact:
/// a steady cycle runs only while no unit got a command since (the command epoch), and only a
/// command changes a parameter, a source, bypass, caching or notifications; a ramp keeps its
/// unit out of the lean path until it has ended, and the cycle after it refills the slots.
enum SteadyKernel: UInt8 {
    /// The unit's own lean render (`AudioUnit.renderPlannedLean`): no compact form.
    case unit
    /// `GainUnit`'s kernel on one or two channels.
    case gain
    /// `MultiChannelMixerUnit`'s steady form: `state` is its kernel, which holds the bound or
    /// pulled inputs and the parameter constants (`MultiChannelMixerUnit.renderSteady`).
    case mixer
}

/// One step of a steady cycle, one cache line.
struct SteadySlot {
    var kernel: SteadyKernel = .unit
    var channelCount: Int32 = 0
    /// The input's and output's channels (a chain in place: the same buffer).
    var input0: UnsafeMutablePointer<Float>?
    var input1: UnsafeMutablePointer<Float>?
    var output0: UnsafeMutablePointer<Float>?
    var output1: UnsafeMutablePointer<Float>?
    /// The kernel's parameter values, as its unit's ramps hold them (no ramp runs).
    var value0: Float = 0
    var value1: Float = 0
    var value2: Float = 0
    var value3: Float = 0
    /// A kernel's own state, when its values do not fit the slot (the mixer's: 64 inputs).
    /// Also pads the slot to 64 bytes: a slot never straddles two lines.
    var state: UnsafeMutableRawPointer?
}
