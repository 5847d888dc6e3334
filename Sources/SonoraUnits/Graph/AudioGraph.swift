import SonoraCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Core Audio's AUGraph: audio units as nodes, output elements connected to
/// input elements, pulled from one output node (the head).
///
/// Before `initialize()`, changes apply at once. Once initialized, structural
/// changes (nodes, connections, callbacks) are recorded and take effect at
/// `update()`: new nodes are initialized off the realtime thread, then every
/// change goes to the realtime side as one batch that the head applies at a
/// cycle boundary, all together; inputs whose source changes crossfade over
/// 64 frames; removed units stay alive until the realtime side is done with them.
public final class AudioGraph: @unchecked Sendable {
    /// A node's number (`AUNode`).
    public typealias Node = Int

    struct Connection: Hashable {
        var source: Node
        var bus: Int
        var destination: Node
        var input: Int
    }

    struct InputKey: Hashable {
        var node: Node
        var input: Int
    }

    private(set) var units: [Node: AudioUnit] = [:]
    private(set) var names: [Node: String] = [:]
    private var nextNode = 1
    private(set) var connections: Set<Connection> = []
    private var callbacks: [InputKey: (callback: RenderCallback, target: AnyObject?)] = [:]
    /// What the units were last told (the realtime side's picture once the batch is applied):
    /// the connection feeding each input, by input.
    private var appliedByInput: [InputKey: Connection] = [:]
    private var appliedCallbacks: [InputKey: RenderCallback] = [:]
    /// The nodes whose units cache their output (fan-out, and a crossfade's old sources: `update()`).
    private var appliedCaching: Set<Node> = []
    /// What changed since the last update (initialized graphs), so `update()` looks at the
    /// changes and not at every node and input of the graph: each input whose connection or
    /// callback was set, with the connection now feeding it (nil: none), and the nodes added.
    private var pendingInputs: [InputKey: Connection?] = [:]
    private var addedNodes: Set<Node> = []

    public private(set) var isOpen = false
    public private(set) var isInitialized = false
    public private(set) var isRunning = false
    public private(set) var outputNode: Node?

    // Realtime side.
    private let commands: MessageQueue<GraphCommand>
    private let staged: UnsafeMutablePointer<GraphCommand>
    private static let stagedCapacity = 4096
    @exclusivity(unchecked) private var stagedCount = 0
    @exclusivity(unchecked) private var head: Unmanaged<AudioUnit>?
    /// The transport (see AudioGraph+Transport.swift) and its unretained handle for the render path.
    var attachedTransport: Transport?
    @exclusivity(unchecked) var realtimeTransport: Unmanaged<Transport>?
    /// The render plan (RenderPlan.swift): compiled at initialize and every update; nil
    /// when the graph renders by pull (`planRefusal` says why).
    private(set) var plan: RenderPlan?
    private(set) var planRefusal: String?
    /// Off: the graph renders by recursive pull (a reference for tests and benchmarks);
    /// takes effect at the next initialize or update.
    var rendersWithPlan = true
    /// Off: every plan step takes the full path, never the lean one (a reference for tests
    /// and `sonora-bench graph --full-steps`); takes effect at the next initialize or update.
    @_spi(Benchmark) public var plansLeanSteps = true
    @exclusivity(unchecked) private var realtimePlan: Unmanaged<RenderPlan>?
    private let framesRendered = Atomic<Int>(0)
    private let appliedBatch = Atomic<Int>(0)
    private var batch = 0
    /// Removed units and replaced callback targets, kept until the render side is done with
    /// them: `appliedBy` is the frame count when this side first saw their batch applied.
    private var retired: [(batch: Int, object: AnyObject, appliedBy: Int?)] = []

    public init() {
        commands = try! MessageQueue(capacity: Self.stagedCapacity)
        staged = .allocate(capacity: Self.stagedCapacity)
    }

    deinit {
        staged.deallocate()
    }

    // MARK: Nodes

    /// Adds a unit of the given component (`AUGraphAddNode`).
    @discardableResult
    public func addNode(_ description: AudioComponentDescription, name: String? = nil) throws(AudioError) -> Node {
        addNode(try AudioComponentRegistry.shared.instantiate(description), name: name)
    }

    /// Adds an existing unit.
    @discardableResult
    public func addNode(_ unit: AudioUnit, name: String? = nil) -> Node {
        let node = nextNode
        nextNode += 1
        units[node] = unit
        names[node] = name ?? "\(unit.name)#\(node)"
        addedNodes.insert(node)
        return node
    }

    /// Removes a node and every connection to or from it.
    public func removeNode(_ node: Node) throws(AudioError) {
        _ = try unit(node)
        for edge in connections where edge.source == node || edge.destination == node {
            pendingInputs.updateValue(nil, forKey: InputKey(node: edge.destination, input: edge.input))
        }
        connections = connections.filter { $0.source != node && $0.destination != node }
        for key in callbacks.keys where key.node == node { replaceCallback(key, with: nil) }
        // A node added since the last update never reached the realtime side: nothing to retire.
        if addedNodes.remove(node) == nil && isInitialized { removedUnits[node] = units[node] }
        units[node] = nil
        names[node] = nil
        if outputNode == node { outputNode = nil }
    }

    public func unit(_ node: Node) throws(AudioError) -> AudioUnit {
        guard let unit = units[node] else { throw AudioError(.graphNodeNotFound, "the graph has no node \(node)") }
        return unit
    }

    public func name(_ node: Node) -> String { names[node] ?? "node \(node)" }

    public var nodes: [Node] { units.keys.sorted() }

    // MARK: Connections

    /// Feeds `destination`'s input `input` from `source`'s output `bus`
    /// (`AUGraphConnectNodeInput`). Checked at once: nodes, elements, cycles. Formats are
    /// checked when Core Audio checks them: at `initialize()` (or `update()` for a new
    /// node), so formats may still be set after connecting — and here only when both
    /// units are already initialized, as their formats can no longer change.
    public func connect(_ source: Node, bus: Int, to destination: Node, input: Int) throws(AudioError) {
        let from = try unit(source)
        let to = try unit(destination)
        let edge = "\(name(source)) output \(bus) → \(name(destination)) input \(input)"
        guard bus >= 0 && bus < from.elementCount(.output) else {
            throw AudioError(.invalidElement, "\(edge): \(name(source)) has \(from.elementCount(.output)) outputs")
        }
        guard input >= 0 && input < to.elementCount(.input) else {
            throw AudioError(.invalidElement, "\(edge): \(name(destination)) has \(to.elementCount(.input)) inputs")
        }
        if from.isInitialized && to.isInitialized {
            try checkFormats(source, bus: bus, to: destination, input: input)
        }
        if let path = path(from: destination, to: source) {
            let loop = ([source] + path).map(name).joined(separator: " → ")
            throw AudioError(.graphInvalidConnection, "\(edge) would close a cycle: \(loop)")
        }
        connections = connections.filter { !($0.destination == destination && $0.input == input) }
        replaceCallback(InputKey(node: destination, input: input), with: nil)
        let connection = Connection(source: source, bus: bus, destination: destination, input: input)
        connections.insert(connection)
        pendingInputs[InputKey(node: destination, input: input)] = connection
    }

    /// Throws, naming both nodes, unless `source`'s output `bus` produces the channel count
    /// and sample rate `destination`'s input `input` takes. For callers that want a connection's
    /// formats checked before `initialize()` (a config checker reporting where the connection is).
    public func checkFormats(_ source: Node, bus: Int, to destination: Node, input: Int) throws(AudioError) {
        let edge = "\(name(source)) output \(bus) → \(name(destination)) input \(input)"
        let produced = try unit(source).streamFormat(scope: .output, element: bus)
        let taken = try unit(destination).streamFormat(scope: .input, element: input)
        guard produced.channelsPerFrame == taken.channelsPerFrame && produced.sampleRate == taken.sampleRate else {
            throw AudioError(.formatNotSupported, "\(edge): \(name(source)) produces \(produced), \(name(destination)) takes \(taken)")
        }
    }

    /// Checks the formats of `edges` in a fixed order (destination, then input).
    private func checkFormats(of edges: some Sequence<Connection>) throws(AudioError) {
        let ordered = edges.sorted { ($0.destination, $0.input) < ($1.destination, $1.input) }
        for edge in ordered { try checkFormats(edge.source, bus: edge.bus, to: edge.destination, input: edge.input) }
    }

    /// Removes whatever feeds `destination`'s input `input`.
    public func disconnect(_ destination: Node, input: Int) throws(AudioError) {
        _ = try unit(destination)
        connections = connections.filter { !($0.destination == destination && $0.input == input) }
        replaceCallback(InputKey(node: destination, input: input), with: nil)
    }

    /// Feeds an input from a render callback (`AUGraphSetNodeInputCallback`).
    public func setRenderCallback(_ callback: RenderCallback, node: Node, input: Int, keeping target: AnyObject? = nil)
        throws(AudioError)
    {
        let destination = try unit(node)
        guard input >= 0 && input < destination.elementCount(.input) else {
            throw AudioError(.invalidElement, "\(name(node)) has \(destination.elementCount(.input)) inputs, not \(input)")
        }
        connections = connections.filter { !($0.destination == node && $0.input == input) }
        replaceCallback(InputKey(node: node, input: input), with: (callback, target))
    }

    public func setRenderCallback(_ target: RenderCallbackTarget, node: Node, input: Int) throws(AudioError) {
        try setRenderCallback(RenderCallback(target), node: node, input: input, keeping: target)
    }

    /// The nodes from `start` along connections to `end`, if `end` is reachable.
    private func path(from start: Node, to end: Node) -> [Node]? {
        if start == end { return [start] }
        var visited: Set<Node> = []
        func visit(_ node: Node) -> [Node]? {
            if node == end { return [node] }
            guard visited.insert(node).inserted else { return nil }
            for edge in connections where edge.source == node {
                if let rest = visit(edge.destination) { return [node] + rest }
            }
            return nil
        }
        return visit(start)
    }

    // MARK: Lifecycle

    /// Opens the graph (`AUGraphOpen`). Sonora creates a node's unit when the node
    /// is added, so this only marks the graph open; it is here for ported code.
    public func open() { isOpen = true }

    /// Initializes every unit and wires the connections (`AUGraphInitialize`),
    /// opening the graph first if needed.
    public func initialize() throws(AudioError) {
        guard !isInitialized else { return }
        open()
        let heads = nodes.filter { units[$0]!.componentDescription.type == .outputUnit }
        guard heads.count == 1, let headNode = heads.first else {
            throw AudioError(
                .graphOutputNodeError,
                heads.isEmpty ? "the graph has no output unit to pull from" : "the graph has \(heads.count) output units: \(heads.map(name).joined(separator: ", "))")
        }
        try checkFormats(of: connections)
        for node in nodes { try wireUninitialized(node) }
        handTransport(to: nodes)
        var initialized: [AudioUnit] = []
        do {
            for node in nodes {
                try units[node]!.initialize()
                initialized.append(units[node]!)
            }
        } catch {
            initialized.forEach { $0.uninitialize() }
            throw AudioError(error.code, "initializing the graph: \(error.message)")
        }
        let fanOut = fanOutNodes
        for node in fanOut { units[node]!.send(.setCachesOutput(true)) }
        appliedByInput = Self.byInput(connections)
        appliedCallbacks = callbacks.mapValues(\.callback)
        appliedCaching = fanOut
        pendingInputs.removeAll()
        addedNodes.removeAll()
        removedUnits.removeAll()
        outputNode = headNode
        head = Unmanaged.passUnretained(units[headNode]!)
        realtimeTransport = attachedTransport.map { Unmanaged.passUnretained($0) }
        plan = compilePlan(head: headNode)
        realtimePlan = plan.map { Unmanaged.passUnretained($0) }
        isInitialized = true
    }

    public func uninitialize() {
        guard isInitialized else { return }
        stop()
        head = nil
        realtimeTransport = nil
        realtimePlan = nil
        plan = nil
        for unit in units.values { unit.uninitialize() }
        retired.removeAll()
        isInitialized = false
    }

    /// Starts the graph (`AUGraphStart`): when the head is an I/O unit, its device's I/O
    /// thread starts rendering the graph.
    public func start() throws(AudioError) {
        guard isInitialized else { throw AudioError(.uninitialized, "initialize the graph before starting it") }
        if let io = head?.takeUnretainedValue() as? any DeviceDrivingUnit { try io.start(driving: self) }
        isRunning = true
    }

    public func stop() {
        if let io = head?.takeUnretainedValue() as? any DeviceDrivingUnit { io.stop() }
        isRunning = false
    }

    /// Nodes feeding more than one input. Counted in an array by node number (nodes are
    /// numbered densely): one pass over the connections, no hashing but for the few found.
    private var fanOutNodes: Set<Node> {
        var consumers = [Int32](repeating: 0, count: nextNode)
        var fanOut: Set<Node> = []
        for edge in connections {
            consumers[edge.source] += 1
            if consumers[edge.source] == 2 { fanOut.insert(edge.source) }
        }
        return fanOut
    }

    private func wireUninitialized(_ node: Node) throws(AudioError) {
        let unit = units[node]!
        for input in 0..<unit.elementCount(.input) {
            let key = InputKey(node: node, input: input)
            if let edge = connections.first(where: { $0.destination == node && $0.input == input }) {
                try unit.connect(input: input, from: units[edge.source]!, bus: edge.bus)
            } else if let callback = callbacks[key] {
                try unit.setRenderCallback(callback.callback, input: input)
            } else {
                try unit.disconnect(input: input)
            }
        }
    }

    // MARK: Live update

    /// Applies the changes made since the last update while the graph stays
    /// initialized (`AUGraphUpdate`). Throws, changing nothing on the realtime
    /// side, if a new node fails to initialize or the head was removed.
    public func update() throws(AudioError) {
        guard isInitialized else { return }
        purgeRetired()
        guard let outputNode, units[outputNode] != nil else {
            throw AudioError(.graphOutputNodeError, "the graph's output unit was removed; uninitialize to rebuild")
        }
        // Only what changed since the last update is looked at (graphs of thousands of nodes):
        // the inputs set since, in (node, input) order, and the nodes added since.
        let added = addedNodes
        let changed = pendingInputs.keys.sorted { ($0.node, $0.input) < ($1.node, $1.input) }
        do {
            // The connections made since (one per input; a connection the units already have is not new).
            try checkFormats(of: changed.compactMap { key in
                guard let wanted = pendingInputs[key] ?? nil, wanted != appliedByInput[key] else { return nil }
                return wanted
            })
        } catch {
            throw AudioError(error.code, "update: \(error.message)")
        }
        var initializedNow: [AudioUnit] = []
        do {
            handTransport(to: added)
            for node in added.sorted() {
                try wireUninitialized(node)
                try units[node]!.initialize()
                initializedNow.append(units[node]!)
            }
        } catch {
            initializedNow.forEach { $0.uninitialize() }
            throw AudioError(error.code, "update: \(error.message)")
        }
        batch += 1
        func push(_ command: GraphCommand) {
            while !commands.push(command) { sched_yield() }  // the realtime side drains it every cycle
        }
        // The inputs of the nodes removed since, as the units were last told: a crossfade
        // from a removed node pulls it, and it pulls these.
        var removedInputs: [Node: [Node]] = [:]
        for (node, unit) in removedUnits {
            removedInputs[node] = (0..<unit.elementCount(.input)).compactMap {
                appliedByInput[InputKey(node: node, input: $0)]?.source
            }
        }
        var fadedFrom: [Node] = []
        // Inputs whose source changed, on nodes that stay.
        for key in changed {
            let wanted = pendingInputs[key] ?? nil
            let wantedCallback = callbacks[key]?.callback
            defer {
                appliedByInput[key] = wanted
                appliedCallbacks[key] = wantedCallback
            }
            guard !added.contains(key.node), let unit = units[key.node], key.input < unit.elementCount(.input) else { continue }
            let had = appliedByInput[key]
            let hadCallback = appliedCallbacks[key]
            let sameCallback = wantedCallback?.identity == hadCallback?.identity
            guard wanted != had || (wanted == nil && !sameCallback) else { continue }
            if let had { fadedFrom.append(had.source) }
            let source: InputSource
            if let wanted {
                source = .connection(Unmanaged.passUnretained(units[wanted.source]!), bus: wanted.bus)
                unit.recordConnection(input: key.input, from: units[wanted.source]!, bus: wanted.bus)
            } else if let callback = wantedCallback {
                source = .callback(callback)
                unit.recordConnection(input: key.input, from: nil, bus: 0)
            } else {
                source = .none
                unit.recordConnection(input: key.input, from: nil, bus: 0)
            }
            push(.setInput(unit: Unmanaged.passUnretained(unit), element: Int32(key.input), source: source))
        }
        // A crossfade pulls its old source once more in the cycle that applies this batch.
        // That source caches its output, so the pull gets what the cycle rendered: rendering it
        // again would advance its state twice and recurse through everything upstream of it (a
        // stack as deep as the chain, past a realtime thread's 256 KB in a long one). A removed
        // old source is rendered only by that pull; the sources of its inputs are cached
        // instead. The cache stays on until the next update (one copy of a period per cycle).
        var caching = fanOutNodes
        var visited: Set<Node> = []
        while let old = fadedFrom.popLast() {
            guard visited.insert(old).inserted else { continue }
            if units[old] != nil {
                caching.insert(old)
            } else {
                fadedFrom.append(contentsOf: removedInputs[old] ?? [])
            }
        }
        for node in caching.symmetricDifference(appliedCaching).sorted() where units[node] != nil {
            push(.setCachesOutput(unit: Unmanaged.passUnretained(units[node]!), on: caching.contains(node)))
        }
        let oldPlan = plan
        plan = compilePlan(head: outputNode)
        if plan != nil || oldPlan != nil { push(.setPlan(plan.map { Unmanaged.passUnretained($0) })) }
        if let oldPlan { retired.append((batch, oldPlan, nil)) }
        push(.commit(batch: batch))
        // Units removed from the graph live until the realtime side has let go of them.
        for (_, unit) in removedUnits { retired.append((batch, unit, nil)) }
        for target in replacedTargets { retired.append((batch, target, nil)) }
        replacedTargets.removeAll()
        removedUnits.removeAll()
        pendingInputs.removeAll()
        addedNodes.removeAll()
        appliedCaching = caching
    }

    private static func byInput(_ edges: Set<Connection>) -> [InputKey: Connection] {
        Dictionary(edges.map { (InputKey(node: $0.destination, input: $0.input), $0) }) { first, _ in first }
    }

    private func compilePlan(head: Node) -> RenderPlan? {
        guard rendersWithPlan else {
            planRefusal = "turned off"
            return nil
        }
        let (plan, refusal) = RenderPlan.compile(head: head, units: units, connections: connections, leanSteps: plansLeanSteps)
        planRefusal = refusal
        return plan
    }

    /// The plan the realtime side renders with (tests: read after `appliedUpdates` shows the batch applied).
    var planInUse: RenderPlan? { realtimePlan?.takeUnretainedValue() }

    /// Update batches the realtime side has applied so far (each `update()` that changed
    /// something is one): a caller can wait for its change to be live.
    public var appliedUpdates: Int { appliedBatch.load(ordering: .acquiring) }

    /// Units removed since the last update, kept for retirement.
    private var removedUnits: [Node: AudioUnit] = [:]
    /// Callback targets replaced since the last update, kept for retirement.
    private var replacedTargets: [AnyObject] = []

    private func replaceCallback(_ key: InputKey, with entry: (callback: RenderCallback, target: AnyObject?)?) {
        if isInitialized, let old = callbacks[key]?.target { replacedTargets.append(old) }
        callbacks[key] = entry
        pendingInputs.updateValue(nil, forKey: key)  // a connection to it, if any, is recorded after
    }

    private func purgeRetired() {
        let appliedBatch = appliedBatch.load(ordering: .acquiring)
        let rendered = framesRendered.load(ordering: .acquiring)
        // A removed unit is still pulled after its batch is applied — as the source a
        // crossfade fades out, for crossfadeFrames — however many later batches were applied
        // in the same cycle. So each is kept until well past the cycle its batch landed in
        // (two 4096-frame slices, far beyond any crossfade), counted from when this side
        // first saw it applied.
        for index in retired.indices where retired[index].appliedBy == nil && retired[index].batch <= appliedBatch {
            retired[index].appliedBy = rendered
        }
        retired.removeAll { entry in entry.appliedBy.map { rendered >= $0 + 2 * 4096 } ?? false }
    }

    // MARK: Rendering (realtime)

    /// Renders the head's output: applies a pending update batch at this cycle
    /// boundary, then pulls. Realtime-safe.
    public func render(
        flags: inout RenderActionFlags, timeStamp: AudioTimeStamp, frameCount: Int, into buffers: AudioBufferList
    ) -> AudioError.Code {
        guard let head else { return .uninitialized }
        applyCommands()
        realtimeTransport?._withUnsafeGuaranteedRef { $0.beginCycle(sampleTime: timeStamp.sampleTime, frameCount: frameCount) }
        let status: AudioError.Code
        // The plan needs a valid sample time: the pull renders a fan-out source once per
        // consumer without one (its cache keys on the sample time), and the plan keeps that.
        if let realtimePlan, timeStamp.flags.contains(.sampleTimeValid) {
            status = realtimePlan._withUnsafeGuaranteedRef {
                $0.render(timeStamp: timeStamp, frameCount: frameCount, into: buffers)
            }
        } else {
            status = head._withUnsafeGuaranteedRef {
                $0.render(flags: &flags, timeStamp: timeStamp, bus: 0, frameCount: frameCount, into: buffers)
            }
        }
        realtimeTransport?._withUnsafeGuaranteedRef { $0.endCycle() }
        framesRendered.add(frameCount, ordering: .releasing)
        return status
    }

    private func applyCommands() {
        while let command = commands.pop() {
            if case .commit(let number) = command {
                for index in 0..<stagedCount { apply(staged[index]) }
                stagedCount = 0
                appliedBatch.store(number, ordering: .releasing)
            } else if stagedCount < Self.stagedCapacity {
                staged[stagedCount] = command
                stagedCount += 1
            }
        }
    }

    private func apply(_ command: GraphCommand) {
        switch command {
        case .setInput(let unit, let element, let source):
            unit._withUnsafeGuaranteedRef { unit in
                guard let core = unit.core else { return }
                unit.setInputSource(source, element: Int(element), core, crossfade: true)
            }
        case .setCachesOutput(let unit, let on):
            unit._withUnsafeGuaranteedRef { unit in
                guard let core = unit.core else { return }
                core.pointee.cachesOutput = on
                for bus in 0..<core.pointee.outputCount { core.pointee.cachedSampleTimes[bus] = -1 }
            }
        case .setPlan(let plan):
            realtimePlan = plan
        case .commit:
            break
        }
    }

    // MARK: Offline

    /// Renders `frameCount` frames from the head into arrays, one per channel (not realtime).
    public func renderOffline(frameCount: Int, sliceFrames: Int = 512, startSampleTime: Double = 0) throws(AudioError) -> [[Float]] {
        guard let outputNode else { throw AudioError(.uninitialized, "initialize the graph before rendering") }
        let format = try units[outputNode]!.streamFormat(scope: .output, element: 0)
        let channels = Int(format.channelsPerFrame)
        let buffers = try OwnedAudioBufferList(channelCount: channels, frameCapacity: sliceFrames)
        var result = Array(repeating: [Float](), count: channels)
        var done = 0
        while done < frameCount {
            let frames = min(sliceFrames, frameCount - done)
            var flags = RenderActionFlags()
            let status = render(
                flags: &flags, timeStamp: AudioTimeStamp(sampleTime: startSampleTime + Double(done)), frameCount: frames,
                into: buffers.list(frameCount: frames))
            guard status == .noError else {
                throw AudioError(status, "graph render at sample \(Int(startSampleTime) + done) failed")
            }
            for channel in 0..<channels { result[channel] += buffers.list(frameCount: frames)[channel] }
            done += frames
        }
        return result
    }

    // MARK: Latency

    /// Nodes inserted by `compensateLatency()`.
    private(set) var compensationNodes: Set<Node> = []

    /// Aligns parallel paths: wherever a node's inputs arrive with different
    /// latencies, delays the earlier ones (SampleDelay nodes, named
    /// "latency compensation …") so that all arrive together. Replaces the
    /// compensation of an earlier call; when initialized, takes effect at `update()`.
    public func compensateLatency() throws(AudioError) {
        for node in compensationNodes where units[node] != nil {
            // Reconnect around the old delay.
            guard let incoming = connections.first(where: { $0.destination == node }),
                  let outgoing = connections.first(where: { $0.source == node }) else { continue }
            try removeNode(node)
            try connect(incoming.source, bus: incoming.bus, to: outgoing.destination, input: outgoing.input)
        }
        compensationNodes = []
        var memo: [Node: Int] = [:]
        func arrival(_ node: Node) -> Int {
            if let known = memo[node] { return known }
            let rate = (try? units[node]!.streamFormat(scope: .output, element: 0).sampleRate) ?? 48000
            let upstream = connections.filter { $0.destination == node }.map { arrival($0.source) }.max() ?? 0
            let total = upstream + Int((units[node]!.latency * rate).rounded())
            memo[node] = total
            return total
        }
        for destination in nodes {
            let inputs = connections.filter { $0.destination == destination }
            guard inputs.count > 1 else { continue }
            let latest = inputs.map { arrival($0.source) }.max() ?? 0
            for edge in inputs.sorted(by: { $0.input < $1.input }) where arrival(edge.source) < latest {
                let delay = SampleDelayUnit()
                let format = try units[edge.source]!.streamFormat(scope: .output, element: edge.bus)
                try delay.setStreamFormat(format, scope: .input, element: 0)
                try delay.setStreamFormat(format, scope: .output, element: 0)
                try delay.setMaximumFramesPerSlice(units[destination]!.maximumFramesPerSlice)
                try delay.setParameter(SampleDelayUnit.Parameter.delayFrames, to: Float(latest - arrival(edge.source)))
                let node = addNode(delay, name: "latency compensation for \(name(destination)) input \(edge.input)")
                try connect(edge.source, bus: edge.bus, to: node, input: 0)
                try connect(node, bus: 0, to: destination, input: edge.input)
                compensationNodes.insert(node)
            }
        }
    }

    /// Frames of latency from the furthest source to the head: the largest sum
    /// of unit latencies along any path.
    public var latencyFrames: Int {
        guard let outputNode = outputNode ?? nodes.first(where: { units[$0]!.componentDescription.type == .outputUnit }) else { return 0 }
        let rate = (try? units[outputNode]!.streamFormat(scope: .output, element: 0).sampleRate) ?? 48000
        var memo: [Node: Double] = [:]
        func latency(_ node: Node) -> Double {
            if let known = memo[node] { return known }
            let upstream = connections.filter { $0.destination == node }.map { latency($0.source) }.max() ?? 0
            let total = upstream + (units[node]?.latency ?? 0)
            memo[node] = total
            return total
        }
        return Int((latency(outputNode) * rate).rounded())
    }
}

/// Update batches for the realtime side, applied together at a `commit`.
enum GraphCommand: BitwiseCopyable {
    case setInput(unit: Unmanaged<AudioUnit>, element: Int32, source: InputSource)
    case setCachesOutput(unit: Unmanaged<AudioUnit>, on: Bool)
    /// The plan compiled for the batch (nil: render by pull); the old one is retired with the batch.
    case setPlan(Unmanaged<RenderPlan>?)
    case commit(batch: Int)
}
