import SonoraCore
import SonoraHAL
import SonoraUnits

/// A pipeline built from its config: the graph, the nodes by id, the head (the I/O unit
/// live, a generic output offline) and the input source.
public final class BuiltPipeline: @unchecked Sendable {
    /// As built; the device section follows the device the pipeline runs on (`ctl device`).
    public internal(set) var configuration: PipelineConfiguration
    public let graph: AudioGraph
    public private(set) var nodes: [PipelineNode]
    public let head: AudioUnit
    public let headNode: AudioGraph.Node
    public let io: IOUnit?
    public let input: AudioUnit?
    /// The parameter values the config set, per node.
    public private(set) var configuredParameters: [String: [ResolvedParameter]]
    /// Failures of recorders a reload removed: carried from pipeline to pipeline, so the
    /// exit status still reports them (see `recorderFailures`).
    var retiredRecorderFailures: [RecorderFailure] = []

    init(
        configuration: PipelineConfiguration, graph: AudioGraph, nodes: [PipelineNode], head: AudioUnit,
        headNode: AudioGraph.Node, io: IOUnit?, input: AudioUnit?, parameters: [String: [ResolvedParameter]]
    ) {
        self.configuration = configuration
        self.graph = graph
        self.nodes = nodes
        self.head = head
        self.headNode = headNode
        self.io = io
        self.input = input
        configuredParameters = parameters
    }

    public func node(_ id: String) -> PipelineNode? { nodes.first { $0.id == id } }

    public var recorders: [FileRecorderUnit] { nodes.compactMap { $0.unit as? FileRecorderUnit } }

    /// Renders `frames` frames offline (the head must be a generic output unit), one engine
    /// period at a time through the graph — so graph updates (a reload) land at period
    /// boundaries, as on a device.
    public func renderOffline(frames: Int, consume: (AudioBufferList) throws -> Void) throws {
        guard head is GenericOutputUnit else { throw AudioError(.illegalOperation, "the pipeline runs on a device, not offline") }
        let slice = configuration.engine.periodFrames
        let buffers = try OwnedAudioBufferList(channelCount: configuration.engine.channels, frameCapacity: slice)
        var done = 0
        while done < frames {
            let count = min(slice, frames - done)
            var flags = RenderActionFlags()
            let list = buffers.list(frameCount: count)
            let status = graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(renderedFrames)), frameCount: count, into: list)
            guard status == .noError else { throw AudioError(status, "render at sample \(renderedFrames) failed") }
            try consume(list)
            done += count
            renderedFrames += count
        }
    }

    /// Frames rendered offline so far (the next render's sample time).
    public private(set) var renderedFrames = 0

    /// Frames the offline input file holds (nil without one).
    public var inputFrames: Int? { (input as? FilePlayerUnit).map(\.frameCount) }

    /// Finishes every recorder (drains and closes its file), all of them even when one
    /// fails; throws the first failure.
    public func finishRecorders() throws {
        var first: Error?
        for recorder in recorders {
            do { try recorder.finish() } catch { first = first ?? error }
        }
        if let first { throw first }
    }
}
