import SonoraCore
import SonoraUnits

/// A node of a built pipeline: its id from the config, its graph node and unit.
public struct PipelineNode: @unchecked Sendable {
    public var id: String
    public var kind: String
    public var node: AudioGraph.Node
    public var unit: AudioUnit
}

/// A parameter address resolved against a unit.
public struct ResolvedParameter: Hashable, Sendable {
    public var id: AudioUnitParameterID
    public var scope: AudioUnitScope
    public var element: AudioUnitElement
    public var value: Float
    public var ramp: Double?
}
