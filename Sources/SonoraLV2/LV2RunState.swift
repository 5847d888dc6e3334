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
struct LV2RunState {
    struct Channel { var element: Int32; var channel: Int32; var port: UInt32 }
    struct Control { var port: UInt32; var slot: Int32 }
    struct AtomPort { var port: UInt32; var buffer: UnsafeMutableRawPointer; var capacity: Int; var isInput: Bool; var takesMIDI: Bool }

    var handle: LV2_Handle?
    /// Decided once when the run state is built: no atom port, worker, control output, second
    /// output element or latency history, and at least one audio output. Such a plugin's
    /// render, while no control change is in flight and host bypass is off and not fading,
    /// is the plain slice (`LV2Unit.renderPlainSlice`): connect, run, nothing after.
    var isPlain: Bool = false
    var connectPort: @convention(c) (LV2_Handle?, UInt32, UnsafeMutableRawPointer?) -> Void
    var run: @convention(c) (LV2_Handle?, UInt32) -> Void
    var worker: Unmanaged<LV2Worker>
    var hasWorker: Bool

    /// One float per port: control ports read and write here.
    var values: UnsafeMutablePointer<Float>
    /// The pointer each port is connected to now, to reconnect only when it changes.
    var connected: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    var inputs: UnsafeMutablePointer<Channel>
    var inputCount: Int
    var outputs: UnsafeMutablePointer<Channel>
    var outputCount: Int
    var controlInputs: UnsafeMutablePointer<Control>
    var controlInputCount: Int
    var controlOutputs: UnsafeMutablePointer<Control>
    var controlOutputCount: Int
    /// Control inputs are copied from the parameter ramps only while this is > 0 (frames):
    /// set when a change is announced (epoch) or bypass flips, counted down per slice.
    var changes: LV2ControlChanges
    var seenEpoch: Int
    var controlCopyFrames: Int
    /// Frames a change may take to be applied after it is announced (two cycles).
    var controlSlack: Int
    var lastBypassed: Bool
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

    var bypass: LV2Bypass

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
