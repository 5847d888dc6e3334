import SonoraCore

extension AudioGraph {
    /// The graph's transport: every node gets its host callbacks, and each render cycle
    /// advances it (changes applied at their frames before the head renders).
    public var transport: Transport? { attachedTransport }

    /// Gives the graph a transport (or takes it away). Only while uninitialized: the render
    /// path reads it without synchronisation.
    public func attachTransport(_ transport: Transport?) throws(AudioError) {
        guard !isInitialized else {
            throw AudioError(.cannotDoInCurrentContext, "attach a transport before initializing the graph")
        }
        attachedTransport = transport
        handTransport(to: nodes)
    }

    /// Sets the host callbacks of `nodes` (before they render).
    func handTransport(to nodes: some Sequence<Node>) {
        let callbacks = attachedTransport?.hostCallbacks
        for node in nodes { if let unit = units[node] { unit.hostCallbacks = callbacks } }
    }
}
