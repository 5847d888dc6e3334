import SonoraCore
import SonoraUnits

/// A node of a built pipeline: its id from the config, its kind's name, its graph node
/// and unit, and the files it read (so a reload can tell when they changed).
public struct PipelineNode: @unchecked Sendable {
    public var id: String
    public var kind: String
    public var node: AudioGraph.Node
    public var unit: AudioUnit
    public var inputFiles: [FileStamp] = []
    /// Names of the node's sources, input element by element (a mixer3d's), addressed on
    /// the control socket as `ID.NAME`; empty for other kinds.
    public var sources: [String] = []
}

/// A parameter address resolved against a unit.
public struct ResolvedParameter: Hashable, Sendable {
    public var id: AudioUnitParameterID
    public var scope: AudioUnitScope
    public var element: AudioUnitElement
    public var value: Float
    public var ramp: Double?
}
