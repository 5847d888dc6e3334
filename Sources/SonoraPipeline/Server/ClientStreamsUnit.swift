import SonoraCore
import SonoraHAL
import SonoraUnits

/// The programs attached to the appliance, as one node of its graph ('aumx'/'clnt',
/// Sonora's): its output is the sum of every client's playback stream — each at the gain
/// the session policy sets (fades, ducks) — and what reaches its input, if anything is
/// connected there, is what every client's capture stream records.
///
/// The streams live in the appliance server's `ApplianceStreamTable`; the unit services
/// them once per render cycle on the I/O thread. Without a server (`sonora render`,
/// `sonora check`) it renders silence.
public final class ClientStreamsUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .mixer, subType: "clnt", manufacturer: .sonora)

    /// Held unretained on the realtime side (no reference counting there); `table` keeps it alive.
    @exclusivity(unchecked) private var streams: Unmanaged<ApplianceStreamTable>?
    public let table: ApplianceStreamTable?
    /// The routing groups (session roles) whose streams this node takes: `.max` for all.
    public let groups: UInt64

    public init(table: ApplianceStreamTable?, groups: UInt64 = .max) {
        self.table = table
        self.groups = groups
        streams = table.map { Unmanaged.passUnretained($0) }
        super.init(description: Self.componentDescription, name: "Clients", inputs: 1, outputs: 1, parameters: [])
    }

    /// An unconnected input is silence: capture clients then record nothing.
    public override var requiresConnectedInputs: Bool { false }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        context.output.clear()
        guard let streams else { return .noError }
        streams._withUnsafeGuaranteedRef { table in
            table.deliverCapture(context.input(0), frameCount: context.frameCount, groups: groups)
            table.mixPlayback(into: context.output, frameCount: context.frameCount, groups: groups)
        }
        return .noError
    }
}

/// The running appliance's stream table, for the `clients` node kind to find (the kind is
/// built by the same code for `sonora check`, `render` and a reload, which have none).
public enum ServedClientStreams {
    private static let current = ControlLock<ApplianceStreamTable?>(nil)

    public static var table: ApplianceStreamTable? {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }
}
