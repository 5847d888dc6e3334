import CLilv
import SonoraCore
import SonoraUnits

/// A MIDI message for a plugin's MIDI input, `frameOffset` frames into the next render.
public struct LV2MIDIEvent: BitwiseCopyable, Sendable {
    public var frameOffset: Int32
    public var length: UInt8
    public var bytes: (UInt8, UInt8, UInt8)

    public init(_ bytes: [UInt8], at frameOffset: Int) {
        self.frameOffset = Int32(clamping: frameOffset)
        length = UInt8(min(bytes.count, 3))
        self.bytes = (bytes.count > 0 ? bytes[0] : 0, bytes.count > 1 ? bytes[1] : 0, bytes.count > 2 ? bytes[2] : 0)
    }
}

/// Everything `LV2Unit.process` touches, behind raw pointers (no ARC on the render
/// path). Built by `allocateRenderResources()`, freed by `deallocateRenderResources()`.
///
/// It lives in the unit's run block (`Block`), after the two control-change words, and its
/// fields are ordered so that the plain slice in its steady state reads three lines, all at
/// fixed offsets from the state (no pointer to follow first): line 0 (the control-change
/// epoch, the plugin's functions, the steady-state gate), line 1 (the counts and the host
/// bypass) and the channel entries after the state (which carry the pointer each port is
/// connected to). In a host whose copies flush L1 every block, each of these is an L2 access;
/// they were nine lines before, some behind a pointer loaded from another (issue 22, `lv2h8`).
/// Swift lays a struct's stored properties out in declaration order: keep the first ones where
/// they are (`PlainSliceTests` checks the offsets).
struct LV2RunState {
    /// One audio port's place on the unit's buffers, and the pointer it is connected to now
    /// (to reconnect only when it changes). 16 bytes: a stereo plugin's four are one line.
    struct Channel {
        var element: UInt16
        var channel: UInt16
        var port: UInt32
        var connected: UnsafeMutableRawPointer?
    }
    struct Control { var port: UInt32; var slot: Int32 }
    struct AtomPort { var port: UInt32; var buffer: UnsafeMutableRawPointer; var capacity: Int; var isInput: Bool; var takesMIDI: Bool }

    // Line 0 of the block (after the epoch and span words): the plain slice's gate and call.
    var handle: LV2_Handle?
    var run: @convention(c) (LV2_Handle?, UInt32) -> Void
    var connectPort: @convention(c) (LV2_Handle?, UInt32, UnsafeMutableRawPointer?) -> Void
    var seenEpoch: Int
    /// Control inputs are copied from the parameter ramps only while this is > 0 (frames):
    /// set when a change is announced (epoch) or bypass flips, counted down per slice.
    var controlCopyFrames: Int
    /// Decided once when the run state is built: no atom port, worker, control output, second
    /// output element or latency history, and at least one audio output. Such a plugin's
    /// render, while no control change is in flight and host bypass is off and not fading,
    /// is the plain slice (`LV2Unit.renderPlainSlice`): connect, run, nothing after.
    var isPlain: Bool = false
    var lastBypassed: Bool

    // Line 1: the counts and the host bypass (its `mix` is part of the gate).
    var inputCount: Int
    var outputCount: Int
    var bypass: LV2Bypass
    var changes: LV2ControlChanges

    // The rest: read by the general slice only.
    /// The channel entries (in the block, after the state): inputs, then outputs.
    var inputs: UnsafeMutablePointer<Channel>
    var outputs: UnsafeMutablePointer<Channel>
    var worker: Unmanaged<LV2Worker>
    var hasWorker: Bool

    /// One float per port: control ports read and write here.
    var values: UnsafeMutablePointer<Float>
    var controlInputs: UnsafeMutablePointer<Control>
    var controlInputCount: Int
    var controlOutputs: UnsafeMutablePointer<Control>
    var controlOutputCount: Int
    /// Frames a change may take to be applied after it is announced (two cycles).
    var controlSlack: Int
    var atoms: UnsafeMutablePointer<AtomPort>
    var atomCount: Int

    /// With more than one output element the plugin renders every output of a cycle
    /// into these (one per output channel, `maximumFrames` long), and each element's
    /// render copies its part out; with one element it writes straight into the caller's buffers.
    var ownOutputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?
    var outputBusCount: Int
    var lastCycleStart: Double
    var lastCycleEnd: Int

    // MIDI: taken from the queue at each cycle start, written into the MIDI port's sequence per slice.
    var midi: Unmanaged<MessageQueue<LV2MIDIEvent>>
    var pendingMIDI: UnsafeMutablePointer<LV2MIDIEvent>
    var pendingMIDICount: Int
    /// Frames the current cycle has reached, so MIDI beyond it moves to the next cycle.
    var midiCycleEnd: Int
    static let midiCapacity = 512

    /// Index (into `atoms`) of the control input that takes patch messages, or -1.
    var patchPort: Int32
    var patches: Unmanaged<RecordRing>

    /// Index (into `atoms`) of the input that takes time:Position from the graph's transport, or -1;
    /// whether the plugin has had its first position, the URIDs and a scratch list for one slice's positions.
    var positionPort: Int32
    var positionSent: Bool
    var positionURIDs: LV2PositionURIDs
    var positionEvents: UnsafeMutablePointer<TransportPositionChange>

    var atomOutputs: Unmanaged<RecordRing>
    var sequenceURID: UInt32
    var chunkURID: UInt32
    var midiURID: UInt32
}

extension LV2RunState {
    /// The unit's run block, allocated once with the unit (its shape — the audio channels — is
    /// fixed by the plugin): 64-aligned; the control-change words (`LV2ControlChanges`: epoch,
    /// span) at 0, the state at `stateOffset`, the channel entries (inputs, then outputs) from
    /// `channelsOffset`, a line boundary.
    enum Block {
        @inline(__always) static var stateOffset: Int { 16 }
        @inline(__always) static var channelsOffset: Int {
            (stateOffset + MemoryLayout<LV2RunState>.stride + 63) / 64 * 64
        }
        static func byteCount(channels: Int) -> Int { channelsOffset + max(1, channels) * MemoryLayout<Channel>.stride }
    }

    /// The channel entries of the state at `state` (inputs first): a fixed offset, no load.
    @inline(__always)
    static func channels(_ state: UnsafeMutablePointer<LV2RunState>) -> UnsafeMutablePointer<Channel> {
        (UnsafeMutableRawPointer(state) + (Block.channelsOffset - Block.stateOffset)).assumingMemoryBound(to: Channel.self)
    }
}
