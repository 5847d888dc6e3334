import SonoraCore
import Synchronization

/// A graph compiled for rendering without recursion: the renders the recursive pull
/// would make, as a flat list, on buffers the plan owns.
///
/// Compiled on the control side (at `AudioGraph.initialize()` and every `update()`),
/// handed to the realtime side in the update's batch, retired with it. The list is the
/// pull's own order — a depth-first walk from the head, inputs in element order — split
/// into an *enter* (the render's start: pending commands, pre-render notifications) and
/// an *exit* (its inputs are ready: process, post-render notifications) per step, so
/// every callback and command sees exactly what it saw under the pull. A unit feeding
/// several inputs is one step (the pull served the others from its cache). Each step
/// writes a buffer of the plan, reused once its last reader has run; a one-in one-out
/// unit that can process in place works in its source's buffer when it is that
/// buffer's last reader, so a chain runs in one buffer.
final class RenderPlan {
    /// One render of one output element of one unit.
    struct Step {
        var unit: Unmanaged<AudioUnit>
        var core: UnsafeMutablePointer<RealtimeCore>
        var bus: Int
        /// The plan buffer it writes (the caller's buffers for the head).
        var output: AudioBufferList
        var isHead: Bool
        /// Rendered by the unit's own `render` (a unit that pulls its inputs itself, with
        /// the nodes above it): the pull path, unchanged.
        var pullsItself: Bool
        /// The head that pulls its inputs itself but takes them from the plan (the I/O unit).
        var servesPulls: Bool
        /// The first step of its unit in a cycle takes the inputs (and runs their crossfades);
        /// a later element of the same unit reuses them, as the pull does.
        var bindsInputs: Bool
        /// Where its unit's inputs are in `inputs` (one entry per input element).
        var firstInput: Int
        /// The step whose render asked for this one (-1 for the head): a failure marks
        /// them all, as a failed pull does up the recursion.
        var parent: Int
        /// May take the lean path when its unit is steady this cycle: neither pulling its
        /// inputs itself nor serving pulls (those keep the full step).
        var canBeLean: Bool
    }

    /// An input element as the plan sees it.
    struct Input {
        /// The unit feeding it in the graph, opaque (nil: a render callback or nothing — pulled).
        var source: UnsafeMutableRawPointer?
        var bus: Int
        /// The source step's output buffer.
        var list: AudioBufferList
        /// Realtime: whether the last binding read `list` directly.
        var direct: Bool
    }

    let steps: UnsafeMutablePointer<Step>
    let stepCount: Int
    let inputs: UnsafeMutablePointer<Input>
    let inputCount: Int
    /// `step << 1 | 1` for an exit, `step << 1` for an enter.
    let ops: UnsafeMutablePointer<Int32>
    let opCount: Int
    /// The steps in exit (render) order, for a steady cycle (no enters to make).
    let exits: UnsafeMutablePointer<Int32>
    /// A steady cycle's steps in render order, compact (`SteadySlot`); filled at the end of a
    /// cycle that makes the next one steady.
    let slots: UnsafeMutablePointer<SteadySlot>
    /// Whether every step may take the lean path, and the largest frame count every unit takes.
    let allCanBeLean: Bool
    let steadyFrameLimit: Int
    /// `unitCommandEpoch`, read once per cycle.
    private let commandEpoch = unitCommandEpoch
    /// Realtime: the epoch read at the last cycle that looked at every step, and whether every
    /// step of the last cycle was steady. Both true again with the epoch unchanged means no
    /// unit got a command since, so none can have an event, ramp, notification or bypass
    /// (only commands start those), and no crossfade (only an update's batch starts one, and
    /// every batch brings a new plan): the cycle renders every step lean, checking nothing.
    @exclusivity(unchecked) private var seenEpoch = -1
    @exclusivity(unchecked) private var steadyLastCycle = false
    private let buffers: [OwnedAudioBufferList]

    // What tests and benchmarks read.
    /// (node, bus) of every step, in render (exit) order.
    let renderOrder: [(node: Int, bus: Int)]
    /// Per step in render order: the plan buffer it writes (-1: the caller's), and what it
    /// reads: the step (render-order index) whose output it takes and that step's buffer.
    var bufferUse: [(writes: Int, reads: [(step: Int, buffer: Int)])] {
        bufferReads.writes.indices.map { step in
            let end = step + 1 < bufferReads.firstRead.count ? bufferReads.firstRead[step + 1] : bufferReads.readSteps.count
            return (
                bufferReads.writes[step],
                (bufferReads.firstRead[step]..<end).map { (bufferReads.readSteps[$0], bufferReads.readBuffers[$0]) }
            )
        }
    }
    private let bufferReads: BufferReads
    /// Plan buffers (besides a one-frame placeholder).
    var bufferCount: Int { buffers.count - 1 }
    let inPlaceSteps: Int
    /// Steps rendered by the lean path so far (tests: that it was taken, and when not).
    @exclusivity(unchecked) private(set) var leanStepsTaken = 0
    /// Steps whose unit's compact kernel the steady cycles run (`SteadySlot`), as last filled.
    var compactSteadySteps: Int { (0..<stepCount).reduce(0) { $0 + (slots[$1].kernel == .unit ? 0 : 1) } }
    /// Cycles rendered as steady (every step lean, no step checked) so far.
    @exclusivity(unchecked) private(set) var steadyCycles = 0

    private init(
        steps: [Step], inputs: [Input], ops: [Int32], buffers: [OwnedAudioBufferList],
        renderOrder: [(node: Int, bus: Int)], bufferReads: BufferReads, inPlaceSteps: Int,
        steadyFrameLimit: Int
    ) {
        self.steps = .allocate(capacity: max(steps.count, 1))
        self.steps.initialize(from: steps, count: steps.count)
        stepCount = steps.count
        self.inputs = .allocate(capacity: max(inputs.count, 1))
        self.inputs.initialize(from: inputs, count: inputs.count)
        inputCount = inputs.count
        self.ops = .allocate(capacity: max(ops.count, 1))
        self.ops.initialize(from: ops, count: ops.count)
        opCount = ops.count
        let exitOrder = ops.filter { $0 & 1 == 1 }.map { $0 >> 1 }
        exits = .allocate(capacity: max(exitOrder.count, 1))
        exits.initialize(from: exitOrder, count: exitOrder.count)
        slots = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<SteadySlot>.stride * max(exitOrder.count, 1), alignment: 64
        ).bindMemory(to: SteadySlot.self, capacity: max(exitOrder.count, 1))
        slots.initialize(repeating: SteadySlot(), count: max(exitOrder.count, 1))
        allCanBeLean = !steps.isEmpty && steps.allSatisfy(\.canBeLean) && exitOrder.count == steps.count
        self.steadyFrameLimit = steadyFrameLimit
        self.buffers = buffers
        self.renderOrder = renderOrder
        self.bufferReads = bufferReads
        self.inPlaceSteps = inPlaceSteps
    }

    deinit {
        steps.deallocate()
        inputs.deallocate()
        ops.deallocate()
        exits.deallocate()
        slots.deallocate()
    }

    /// Compiles the graph pulled from `head`, or says why it cannot be planned (the graph
    /// then renders by pull). Every unit must be initialized.
    ///
    /// Linear in the graph's size, on flat arrays indexed by node number (nodes are numbered
    /// densely from 1): an `update()` of one node of a graph of thousands recompiles it
    /// within its time budget, where keyed dictionaries and per-step arrays cost a hash or a
    /// heap block per node and input.
    static func compile(
        head: Int, units: [Int: AudioUnit], connections: Set<AudioGraph.Connection>, leanSteps: Bool = true
    ) -> (plan: RenderPlan?, refusal: String?) {
        guard let headUnit = units[head], headUnit.core != nil else { return (nil, "the head is not initialized") }
        if headUnit.pullsInputsItself && !headUnit.takesPlannedInputs {
            return (nil, "the head (\(headUnit.name)) pulls its input itself, in slices of its own choosing")
        }
        let index = GraphIndex(units: units, connections: connections, head: head)

        struct Draft {
            var node: Int
            var bus: Int
            var unit: Unmanaged<AudioUnit>
            var core: UnsafeMutablePointer<RealtimeCore>
            /// The unit's shape, read from the control side's copy (never through `core`, which the
            /// realtime side may be writing while a live update compiles).
            var shape: Unmanaged<RealtimeResources>
            var inputCount: Int
            var parent: Int
            var pullsItself: Bool
            var bindsInputs: Bool
            /// Where its unit's input sources start in `sourceSteps` (binding steps).
            var firstSource = 0
        }
        var drafts: [Draft] = []
        drafts.reserveCapacity(units.count + 1)
        var stepOf = [Int32](repeating: -1, count: index.busSlots)  // (node, bus) → step
        var firstStepOfNode = [Int32](repeating: -1, count: index.nodeLimit)
        var ops: [Int32] = []
        ops.reserveCapacity(2 * units.count + 2)
        var pulledByItself = [Int32](repeating: -1, count: index.nodeLimit)  // node above a self-pulling unit → that unit's node
        var anyPulledByItself = false

        func makeStep(_ node: Int, bus: Int, parent: Int) -> Int? {
            guard let facts = index.facts(node) else { return nil }
            let step = drafts.count
            let binds = firstStepOfNode[node] < 0
            drafts.append(
                Draft(
                    node: node, bus: bus, unit: facts.unit, core: facts.core, shape: facts.shape,
                    inputCount: facts.inputCount, parent: parent, pullsItself: facts.pullsItself && node != head,
                    bindsInputs: binds))
            stepOf[index.busSlot(node, bus)] = Int32(step)
            if binds { firstStepOfNode[node] = Int32(step) }
            ops.append(Int32(step) << 1)
            return step
        }

        // The pull's walk, without recursion (graphs of thousands of nodes).
        guard let root = makeStep(head, bus: 0, parent: -1) else { return (nil, "the head is not initialized") }
        var stack: [(step: Int, next: Int)] = [(root, 0)]
        while let top = stack.last {
            let draft = drafts[top.step]
            if draft.bindsInputs && top.next < draft.inputCount {
                stack[stack.count - 1].next += 1
                guard let edge = index.feeding(draft.node, input: top.next) else { continue }
                guard stepOf[index.busSlot(edge.source, edge.bus)] < 0 else { continue }  // fan-out: rendered once
                guard let step = makeStep(edge.source, bus: edge.bus, parent: top.step) else {
                    return (nil, "node \(edge.source) is not initialized")
                }
                if drafts[step].pullsItself {
                    // It pulls what is above it through the units' own render (pull path).
                    ops.append(Int32(step) << 1 | 1)
                    var pending = [edge.source]
                    while let node = pending.popLast() {
                        for input in 0..<(index.unit(node)?.elementCount(.input) ?? 0) {
                            guard let above = index.feeding(node, input: input) else { continue }
                            if pulledByItself[above.source] < 0 { pending.append(above.source) }
                            pulledByItself[above.source] = Int32(edge.source)
                            anyPulledByItself = true
                        }
                    }
                } else {
                    stack.append((step, 0))
                }
            } else {
                stack.removeLast()
                ops.append(Int32(top.step) << 1 | 1)
            }
        }
        if anyPulledByItself {
            for draft in drafts where pulledByItself[draft.node] >= 0 {
                let puller = Int(pulledByItself[draft.node])
                return (
                    nil,
                    "\(draft.unit.takeUnretainedValue().name) (node \(draft.node)) feeds both \(index.unit(puller)!.name) (node \(puller)), which pulls it itself, and the plan"
                )
            }
        }
        // Input sources, per unit (shared by the steps of a unit's elements): -1 pulled.
        var sourceSteps: [Int32] = []
        for step in drafts.indices where drafts[step].bindsInputs {
            drafts[step].firstSource = sourceSteps.count
            let draft = drafts[step]
            for input in 0..<draft.inputCount {
                guard !draft.pullsItself, let edge = index.feeding(draft.node, input: input) else {
                    sourceSteps.append(-1)
                    continue
                }
                sourceSteps.append(stepOf[index.busSlot(edge.source, edge.bus)])
            }
        }
        /// The binding step of `step`'s unit: where its sources are.
        func binder(_ step: Int) -> Int { Int(firstStepOfNode[drafts[step].node]) }

        // Where each step's output is last read (position of the reader's exit in `ops`).
        var exitAt = [Int](repeating: -1, count: drafts.count)
        for (position, op) in ops.enumerated() where op & 1 == 1 { exitAt[Int(op >> 1)] = position }
        var lastRead = [Int](repeating: -1, count: drafts.count)
        for step in drafts.indices {
            let owner = drafts[binder(step)]
            for input in 0..<owner.inputCount {
                let source = Int(sourceSteps[owner.firstSource + input])
                if source >= 0 { lastRead[source] = max(lastRead[source], exitAt[step]) }
            }
        }

        // Buffers: one per live output, reused after the last reader; in place along chains.
        var channelsOfBuffer: [Int] = []
        var free: [(channels: Int, buffers: [Int])] = []  // few distinct channel counts: a list
        var bufferOf = [Int](repeating: -1, count: drafts.count)
        var released = [Bool](repeating: false, count: drafts.count)
        var inPlace = 0
        var renderOrder: [(node: Int, bus: Int)] = []
        renderOrder.reserveCapacity(drafts.count)
        var reads = BufferReads()
        var renderIndex = [Int](repeating: -1, count: drafts.count)
        for (position, op) in ops.enumerated() where op & 1 == 1 {
            let step = Int(op >> 1)
            let draft = drafts[step]
            let facts = index.facts(draft.node)!
            let channels = draft.bus == 0 ? facts.firstOutputChannels : draft.shape.takeUnretainedValue().outputChannels[draft.bus]
            guard channels > 0 else {
                return (nil, "\(draft.unit.takeUnretainedValue().name) (node \(draft.node)) has an output of no channels")
            }
            let owner = drafts[binder(step)]
            let sources = sourceSteps[owner.firstSource..<owner.firstSource + owner.inputCount]
            if step != root {
                let firstSource = sources.first { $0 >= 0 }.map(Int.init)
                if facts.processesInPlace && facts.inputCount == 1 && facts.outputCount == 1,
                   let source = firstSource, lastRead[source] == position, !released[source], bufferOf[source] >= 0,
                   channelsOfBuffer[bufferOf[source]] == channels
                {
                    bufferOf[step] = bufferOf[source]
                    released[source] = true
                    inPlace += 1
                } else if let list = free.firstIndex(where: { $0.channels == channels }), let reused = free[list].buffers.popLast() {
                    bufferOf[step] = reused
                } else {
                    bufferOf[step] = channelsOfBuffer.count
                    channelsOfBuffer.append(channels)
                }
            }
            renderIndex[step] = renderOrder.count
            renderOrder.append((draft.node, draft.bus))
            reads.begin(writes: bufferOf[step])
            for case let source in sources.lazy.map(Int.init) where source >= 0 { reads.add(step: renderIndex[source], buffer: bufferOf[source]) }
            for case let source in sources.lazy.map(Int.init) where source >= 0 && lastRead[source] == position && !released[source] {
                released[source] = true
                guard bufferOf[source] >= 0 else { continue }
                let channels = channelsOfBuffer[bufferOf[source]]
                if let list = free.firstIndex(where: { $0.channels == channels }) {
                    free[list].buffers.append(bufferOf[source])
                } else {
                    free.append((channels, [bufferOf[source]]))
                }
            }
        }

        var frames = 0
        var steadyFrameLimit = Int.max
        for draft in drafts {
            let maximum = index.facts(draft.node)!.maximumFrames
            frames = max(frames, maximum)
            steadyFrameLimit = min(steadyFrameLimit, maximum)
        }
        var buffers: [OwnedAudioBufferList] = []
        let placeholder: OwnedAudioBufferList
        do {
            placeholder = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 1)
            for channels in channelsOfBuffer { buffers.append(try OwnedAudioBufferList(channelCount: channels, frameCapacity: frames)) }
        } catch {
            return (nil, "no memory for the plan's buffers: \(error.message)")
        }
        let lists = buffers.map(\.list)
        var inputs: [Input] = []
        inputs.reserveCapacity(sourceSteps.count)
        var steps: [Step] = []
        steps.reserveCapacity(drafts.count)
        for (step, draft) in drafts.enumerated() {
            if draft.bindsInputs {
                for input in 0..<draft.inputCount {
                    let source = Int(sourceSteps[draft.firstSource + input])
                    if source >= 0 {
                        inputs.append(
                            Input(
                                source: drafts[source].unit.toOpaque(), bus: drafts[source].bus, list: lists[bufferOf[source]],
                                direct: false))
                    } else {
                        inputs.append(Input(source: nil, bus: 0, list: placeholder.list, direct: false))
                    }
                }
            }
            let owner = drafts[binder(step)]
            let servesPulls = step == root && index.facts(draft.node)!.pullsItself
            steps.append(
                Step(
                    unit: draft.unit, core: draft.core, bus: draft.bus,
                    output: step == root ? placeholder.list : lists[bufferOf[step]],
                    isHead: step == root, pullsItself: draft.pullsItself, servesPulls: servesPulls,
                    bindsInputs: draft.bindsInputs, firstInput: owner.firstSource, parent: draft.parent,
                    canBeLean: leanSteps && !draft.pullsItself && !servesPulls))
        }
        let plan = RenderPlan(
            steps: steps, inputs: inputs, ops: ops, buffers: buffers + [placeholder], renderOrder: renderOrder, bufferReads: reads,
            inPlaceSteps: inPlace, steadyFrameLimit: drafts.isEmpty ? 0 : steadyFrameLimit)
        return (plan, nil)
    }

    /// `bufferUse` as the compile records it: flat, one heap block per field rather than per step.
    struct BufferReads {
        var writes: [Int] = []
        /// Where each step's reads start in `readSteps` / `readBuffers`.
        var firstRead: [Int] = []
        var readSteps: [Int] = []
        var readBuffers: [Int] = []

        mutating func begin(writes buffer: Int) {
            writes.append(buffer)
            firstRead.append(readSteps.count)
        }

        mutating func add(step: Int, buffer: Int) {
            readSteps.append(step)
            readBuffers.append(buffer)
        }
    }

    /// What the compile reads of an initialized unit: its shape from the control side's copy
    /// (never through `core`, which the realtime side may be writing while a live update compiles).
    struct NodeFacts {
        var unit: Unmanaged<AudioUnit>
        var core: UnsafeMutablePointer<RealtimeCore>
        var shape: Unmanaged<RealtimeResources>
        var inputCount: Int
        var outputCount: Int
        var firstOutputChannels: Int
        var maximumFrames: Int
        var pullsItself: Bool
        var processesInPlace: Bool

        init?(_ unit: AudioUnit) {
            guard let core = unit.core, let shape = unit.resources else { return nil }
            self.unit = .passUnretained(unit)
            self.core = core
            self.shape = .passUnretained(shape)
            inputCount = shape.inputCount
            outputCount = shape.outputCount
            firstOutputChannels = shape.firstOutputChannels
            maximumFrames = shape.maximumFrames
            pullsItself = unit.pullsInputsItself
            processesInPlace = unit.canProcessInPlace
        }
    }

    /// The graph's nodes and connections as flat arrays indexed by node number, for the
    /// compile: one pass over each collection, then every lookup is an array read.
    struct GraphIndex {
        /// One past the largest node number.
        let nodeLimit: Int
        private let units: [Unmanaged<AudioUnit>?]
        /// What the compile needs of each initialized unit, gathered in one pass over the units.
        private let nodeFacts: [NodeFacts?]
        /// Per node, where its input elements start in `feedSource` / `feedBus` (one past the
        /// last node: the end).
        private let feedStart: [Int32]
        /// The node feeding each input element (-1: none) and the bus it feeds from.
        private let feedSource: [Int32]
        private let feedBus: [Int32]
        /// Per node, where its output elements start among the (node, bus) slots.
        private let busStart: [Int32]
        let busSlots: Int

        init(units: [Int: AudioUnit], connections: Set<AudioGraph.Connection>, head: Int) {
            var limit = head + 1
            for node in units.keys { limit = max(limit, node + 1) }
            for edge in connections { limit = max(limit, edge.source + 1, edge.destination + 1) }
            nodeLimit = limit
            var unitArray = [Unmanaged<AudioUnit>?](repeating: nil, count: limit)
            var facts = [NodeFacts?](repeating: nil, count: limit)
            // One independent read per unit, in a loop of its own: the units' objects are cold
            // (the realtime side touches only their cores), and loads that do not wait on each
            // other overlap their cache misses.
            for (node, unit) in units {
                unitArray[node] = .passUnretained(unit)
                facts[node] = NodeFacts(unit)
            }
            self.units = unitArray
            nodeFacts = facts
            var inputs = [Int32](repeating: 0, count: limit)
            var buses = [Int32](repeating: 1, count: limit)
            for edge in connections {
                inputs[edge.destination] = max(inputs[edge.destination], Int32(edge.input + 1))
                buses[edge.source] = max(buses[edge.source], Int32(edge.bus + 1))
            }
            var feedStart = [Int32](repeating: 0, count: limit + 1)
            var busStart = [Int32](repeating: 0, count: limit + 1)
            for node in 0..<limit {
                feedStart[node + 1] = feedStart[node] + inputs[node]
                busStart[node + 1] = busStart[node] + buses[node]
            }
            var feedSource = [Int32](repeating: -1, count: Int(feedStart[limit]))
            var feedBus = [Int32](repeating: 0, count: Int(feedStart[limit]))
            for edge in connections {
                let slot = Int(feedStart[edge.destination]) + edge.input
                feedSource[slot] = Int32(edge.source)
                feedBus[slot] = Int32(edge.bus)
            }
            self.feedStart = feedStart
            self.feedSource = feedSource
            self.feedBus = feedBus
            self.busStart = busStart
            busSlots = Int(busStart[limit])
        }

        /// An initialized unit's facts (nil: no such node, or not initialized).
        func facts(_ node: Int) -> NodeFacts? {
            guard node >= 0 && node < nodeLimit else { return nil }
            return nodeFacts[node]
        }

        func unit(_ node: Int) -> AudioUnit? {
            guard node >= 0 && node < nodeLimit else { return nil }
            return units[node]?.takeUnretainedValue()
        }

        /// What feeds `node`'s input element `input`, if a connection does.
        func feeding(_ node: Int, input: Int) -> (source: Int, bus: Int)? {
            guard node >= 0 && node < nodeLimit else { return nil }
            let slot = Int(feedStart[node]) + input
            guard input >= 0 && slot < Int(feedStart[node + 1]), feedSource[slot] >= 0 else { return nil }
            return (Int(feedSource[slot]), Int(feedBus[slot]))
        }

        /// The slot of `node`'s output `bus` (a bus no connection reads shares bus 0's: only the head's bus 0 is asked for
        /// besides the connected ones).
        func busSlot(_ node: Int, _ bus: Int) -> Int {
            Int(busStart[node]) + min(bus, Int(busStart[node + 1] - busStart[node]) - 1)
        }
    }

    // MARK: Rendering (realtime)

    /// Renders one cycle into `buffers` (the head's output). Realtime-safe.
    func render(timeStamp: AudioTimeStamp, frameCount: Int, into buffers: AudioBufferList) -> AudioError.Code {
        let head = steps[0]
        let headCore = head.core
        // The head's checks, in the order its render makes them.
        guard frameCount >= 0 && frameCount <= headCore.pointee.maximumFrames else {
            return head.unit._withUnsafeGuaranteedRef { $0.failed(.tooManyFramesToProcess, headCore) }
        }
        guard buffers.channelCount == headCore.pointee.outputChannels[0] && buffers.frameCount >= frameCount else {
            return head.unit._withUnsafeGuaranteedRef { $0.failed(.parameterError, headCore) }
        }
        let headOutput = buffers.frames(from: 0, count: frameCount)
        let epoch = commandEpoch.pointee.load(ordering: .acquiring)
        if steadyLastCycle && epoch == seenEpoch && frameCount <= steadyFrameLimit {
            return renderSteady(timeStamp: timeStamp, frameCount: frameCount, headOutput: headOutput)
        }
        seenEpoch = epoch
        steadyLastCycle = false
        var lean = 0
        defer { leanStepsTaken &+= lean }
        var position = 0
        while position < opCount {
            let op = Int(ops[position])
            position += 1
            let index = op >> 1
            let step = steps + index
            let core = step.pointee.core
            let status: AudioError.Code
            if op & 1 == 0 {
                if step.pointee.pullsItself { continue }  // its own render does it all at the exit
                guard frameCount <= core.pointee.maximumFrames else {
                    return fail(.tooManyFramesToProcess, from: index)
                }
                // Lean: no command queued and no notification — nothing to do at the start.
                if core.pointee.commandsSent.pointee.load(ordering: .acquiring) == core.pointee.commandsTaken
                    && core.pointee.notifyCount == 0
                {
                    continue
                }
                let output = step.pointee.isHead ? headOutput : step.pointee.output.frames(from: 0, count: frameCount)
                step.pointee.unit._withUnsafeGuaranteedRef {
                    $0.applyCommands(core)
                    $0.callNotify(core, .preRender, timeStamp: timeStamp, bus: step.pointee.bus, frameCount: frameCount, buffers: output)
                }
                continue
            }
            let output = step.pointee.isHead ? headOutput : step.pointee.output.frames(from: 0, count: frameCount)
            if core.pointee.cachesOutput && timeStamp.flags.contains(.sampleTimeValid)
                && core.pointee.cachedSampleTimes[step.pointee.bus] == timeStamp.sampleTime
                && core.pointee.cachedFrames[step.pointee.bus] == frameCount
            {
                // Rendered already this cycle, pulled ahead of its step as a crossfade's old
                // source: a unit renders once per cycle, as in the pull.
                output.copy(from: core.pointee.outputCaches[step.pointee.bus])
                continue
            }
            if step.pointee.canBeLean && core.pointee.isSteady {
                lean &+= 1
                status = step.pointee.unit._withUnsafeGuaranteedRef {
                    $0.renderPlannedLean(
                        core, timeStamp: timeStamp, bus: step.pointee.bus, frameCount: frameCount, output: output,
                        inputs: inputs + step.pointee.firstInput, bindsInputs: step.pointee.bindsInputs)
                }
            } else if step.pointee.pullsItself {
                var flags = RenderActionFlags()
                status = step.pointee.unit._withUnsafeGuaranteedRef {
                    $0.render(flags: &flags, timeStamp: timeStamp, bus: step.pointee.bus, frameCount: frameCount, into: output)
                }
            } else {
                status = step.pointee.unit._withUnsafeGuaranteedRef {
                    $0.renderPlanned(
                        core, timeStamp: timeStamp, bus: step.pointee.bus, frameCount: frameCount, output: output,
                        inputs: inputs + step.pointee.firstInput, bindsInputs: step.pointee.bindsInputs,
                        servesPulls: step.pointee.servesPulls)
                }
            }
            if status != .noError { return fail(status, from: index) }
        }
        steadyLastCycle = allCanBeLean && lean == stepCount
        if steadyLastCycle { fillSteadySlots() }
        return .noError
    }

    /// Fills `slots` for the steady cycles that follow a cycle in which every step was lean
    /// (its bindings are in `inputs`). A step gets its unit's compact kernel when the unit has
    /// one and nothing else of its lean render is in play: not the head (its buffers are the
    /// caller's, new each cycle), the only step of its unit (it binds the inputs), no output
    /// cache to fill; and one input element bound directly to a plan buffer (so no binding to
    /// make or undo), or a kernel that takes its inputs as they are bound or pulled (the
    /// mixer's). Otherwise `.unit`: the lean render.
    private func fillSteadySlots() {
        for position in 0..<stepCount {
            let step = steps + Int(exits[position])
            let core = step.pointee.core
            var slot = SteadySlot()
            if !step.pointee.isHead && step.pointee.bindsInputs && !core.pointee.cachesOutput
                && core.pointee.outputCount == 1
            {
                let first = inputs + step.pointee.firstInput
                let output = step.pointee.output
                let compact = step.pointee.unit._withUnsafeGuaranteedRef { unit -> SteadySlot? in
                    if core.pointee.inputCount == 1 && first.pointee.direct,
                        let compact = unit.steadySlot(core, input: first.pointee.list, output: output)
                    {
                        return compact
                    }
                    return unit.steadySlot(core, inputs: first, output: output)
                }
                if let compact { slot = compact }
            }
            slots[position] = slot
        }
    }

    /// A cycle in which every step is steady: each step's lean render, in render order.
    private func renderSteady(timeStamp: AudioTimeStamp, frameCount: Int, headOutput: AudioBufferList) -> AudioError.Code {
        for position in 0..<stepCount {
            let slot = slots + position
            if slot.pointee.kernel == .gain {
                GainUnit.renderSteady(slot, frameCount: frameCount)
                continue
            }
            let index = Int(exits[position])
            if slot.pointee.kernel == .mixer {
                let status = MultiChannelMixerUnit.renderSteady(slot, timeStamp: timeStamp, frameCount: frameCount)
                if status != .noError {
                    steadyLastCycle = false
                    leanStepsTaken &+= position
                    return fail(status, from: index)
                }
                continue
            }
            let step = steps + index
            let output = step.pointee.isHead ? headOutput : step.pointee.output.frames(from: 0, count: frameCount)
            let status = step.pointee.unit._withUnsafeGuaranteedRef {
                $0.renderPlannedLean(
                    step.pointee.core, timeStamp: timeStamp, bus: step.pointee.bus, frameCount: frameCount, output: output,
                    inputs: inputs + step.pointee.firstInput, bindsInputs: step.pointee.bindsInputs, reusesBinding: true)
            }
            if status != .noError {
                steadyLastCycle = false
                leanStepsTaken &+= position
                return fail(status, from: index)
            }
        }
        leanStepsTaken &+= stepCount
        steadyCycles &+= 1
        return .noError
    }

    /// Records the failure on the step and every step above it, as the pull's
    /// returns do on the way up, and returns it.
    private func fail(_ status: AudioError.Code, from index: Int) -> AudioError.Code {
        var index = index
        while index >= 0 {
            let step = steps[index]
            _ = step.unit._withUnsafeGuaranteedRef { $0.failed(status, step.core) }
            index = step.parent
        }
        return status
    }
}
