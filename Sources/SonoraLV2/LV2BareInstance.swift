import CLilv
import SonoraUnits
import SonoraCore

/// A second, independent instance of a unit's plugin — same features, same control values,
/// activated — for code that drives `run()` itself: the bare-loop anchor of `sonora-bench lv2`
/// and tests that compare Sonora's host against a minimal one.
public final class LV2BareInstance: @unchecked Sendable {
    let instance: LV2Instance
    public let descriptor: UnsafePointer<LV2_Descriptor>
    public let handle: LV2_Handle?
    /// Audio input and output ports in the unit's channel order (elements, then channels).
    public let inputPorts: [UInt32]
    public let outputPorts: [UInt32]
    /// Atom output buffers and their capacities (reset before each run).
    public let atomOutputs: [(buffer: UnsafeMutableRawPointer, capacity: UInt32)]
    public let chunkURID: UInt32

    init(unit: LV2Unit) throws(AudioError) {
        let instance = try LV2Instance(
            world: unit.world, description: unit.plugin, sampleRate: unit.sampleRate,
            maximumBlockLength: unit.maximumFramesPerSlice, sequenceSize: unit.options.atomBufferSize,
            workerMode: .inline, extraFeatures: unit.options.blockLengthGuarantees)
        self.instance = instance
        for port in unit.plugin.ports where port.kind == .control && port.direction == .input {
            instance.values[port.index] = try unit.parameter(AudioUnitParameterID(port.index))
        }
        descriptor = UnsafePointer(instance.instance.pointee.lv2_descriptor)
        handle = instance.handle
        inputPorts = unit.layout.channels(.input).map { UInt32($0.port) }
        outputPorts = unit.layout.channels(.output).map { UInt32($0.port) }
        atomOutputs = unit.plugin.ports.filter { $0.kind == .atom && $0.direction == .output }.compactMap { port in
            instance.atomBuffers[port.index].map { ($0.buffer, UInt32($0.capacity)) }
        }
        chunkURID = unit.world.urids.map(LV2URI.atomChunk)
        instance.activate()
    }
}

extension LV2Unit {
    /// A separate instance of this unit's plugin with its present control values, activated.
    public func makeBareInstance() throws(AudioError) -> LV2BareInstance {
        try LV2BareInstance(unit: self)
    }
}
