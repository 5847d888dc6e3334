import SonoraCore

/// An `AudioGraph` used as one unit of a bigger graph. Its output is the inner
/// graph's head; each of its inputs feeds one inner node input (an endpoint).
/// The inner graph is initialized with the unit and renders inside its `process`.
public final class SubgraphUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .effect, subType: "subg", manufacturer: .sonora)

    public let graph: AudioGraph
    public let endpoints: [(node: AudioGraph.Node, input: Int)]

    /// Where an endpoint's callback finds this unit's pulled input for the current slice.
    private struct Endpoint {
        var list: UnsafeMutablePointer<AudioBufferList>
        var frameOffset: Int
    }

    @exclusivity(unchecked) private var endpointState: UnsafeMutablePointer<Endpoint>?

    /// - Parameters:
    ///   - graph: an uninitialized graph with one output unit as its head.
    ///   - endpoints: inner node inputs fed by this unit's inputs 0, 1, …
    public init(graph: AudioGraph, endpoints: [(node: AudioGraph.Node, input: Int)] = [], name: String = "Subgraph") throws(AudioError) {
        self.graph = graph
        self.endpoints = endpoints
        let heads = graph.nodes.filter { (try? graph.unit($0).componentDescription.type) == .outputUnit }
        guard heads.count == 1 else {
            throw AudioError(.graphOutputNodeError, "\(name): the inner graph needs exactly one output unit, it has \(heads.count)")
        }
        let output = try graph.unit(heads[0]).streamFormat(scope: .output, element: 0)
        super.init(description: Self.componentDescription, name: name, inputs: endpoints.count, outputs: 1, format: output)
        for (index, endpoint) in endpoints.enumerated() {
            let format = try graph.unit(endpoint.node).streamFormat(scope: .input, element: endpoint.input)
            try setStreamFormat(format, scope: .input, element: index)
        }
    }

    public override var latency: Double {
        let rate = (try? streamFormat(scope: .output, element: 0).sampleRate) ?? 48000
        return Double(graph.latencyFrames) / rate
    }

    public override func validateFormats() throws(AudioError) {}

    public override func allocateRenderResources() throws(AudioError) {
        guard let core else { return }
        let state = UnsafeMutablePointer<Endpoint>.allocate(capacity: max(endpoints.count, 1))
        for index in endpoints.indices {
            (state + index).initialize(to: Endpoint(list: core.pointee.inputLists + index, frameOffset: 0))
        }
        endpointState = state
        for (index, endpoint) in endpoints.enumerated() {
            let callback = RenderCallback(
                function: { context, request in
                    let endpoint = context!.assumingMemoryBound(to: Endpoint.self).pointee
                    let request = request.assumingMemoryBound(to: RenderRequest.self)
                    let source = endpoint.list.pointee.frames(from: endpoint.frameOffset, count: request.pointee.frameCount)
                    request.pointee.buffers.copy(from: source)
                    return 0
                },
                context: UnsafeMutableRawPointer(state + index))
            try graph.setRenderCallback(callback, node: endpoint.node, input: endpoint.input)
        }
        do {
            try graph.initialize()
        } catch {
            state.deallocate()
            endpointState = nil
            throw AudioError(error.code, "\(name): \(error.message)")
        }
    }

    public override func deallocateRenderResources() {
        graph.uninitialize()
        endpointState?.deallocate()
        endpointState = nil
    }

    public override var requiresConnectedInputs: Bool { true }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        if let endpointState {
            for index in endpoints.indices { endpointState[index].frameOffset = context.frameOffset }
        }
        var flags = RenderActionFlags()
        return graph.render(flags: &flags, timeStamp: context.timeStamp, frameCount: context.frameCount, into: context.output)
    }
}
