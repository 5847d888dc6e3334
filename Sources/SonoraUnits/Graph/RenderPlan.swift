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
    let bufferUse: [(writes: Int, reads: [(step: Int, buffer: Int)])]
    /// Plan buffers (besides a one-frame placeholder).
    var bufferCount: Int { buffers.count - 1 }
    let inPlaceSteps: Int
    /// Steps rendered by the lean path so far (tests: that it was taken, and when not).
    @exclusivity(unchecked) private(set) var leanStepsTaken = 0
    /// Cycles rendered as steady (every step lean, no step checked) so far.
    @exclusivity(unchecked) private(set) var steadyCycles = 0

    private init(
        steps: [Step], inputs: [Input], ops: [Int32], buffers: [OwnedAudioBufferList],
        renderOrder: [(node: Int, bus: Int)], bufferUse: [(writes: Int, reads: [(step: Int, buffer: Int)])], inPlaceSteps: Int,
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
        allCanBeLean = !steps.isEmpty && steps.allSatisfy(\.canBeLean) && exitOrder.count == steps.count
        self.steadyFrameLimit = steadyFrameLimit
        self.buffers = buffers
        self.renderOrder = renderOrder
        self.bufferUse = bufferUse
        self.inPlaceSteps = inPlaceSteps
    }

    deinit {
        steps.deallocate()
        inputs.deallocate()
        ops.deallocate()
        exits.deallocate()
    }

    struct Key: Hashable {
        var node: Int
        var bus: Int
    }

    /// Compiles the graph pulled from `head`, or says why it cannot be planned (the graph
    /// then renders by pull). Every unit must be initialized.
    static func compile(
        head: Int, units: [Int: AudioUnit], connections: Set<AudioGraph.Connection>, leanSteps: Bool = true
    ) -> (plan: RenderPlan?, refusal: String?) {
        guard let headUnit = units[head], headUnit.core != nil else { return (nil, "the head is not initialized") }
        if headUnit.pullsInputsItself && !headUnit.takesPlannedInputs {
            return (nil, "the head (\(headUnit.name)) pulls its input itself, in slices of its own choosing")
        }
        var feeding: [AudioGraph.InputKey: AudioGraph.Connection] = [:]
        for edge in connections { feeding[AudioGraph.InputKey(node: edge.destination, input: edge.input)] = edge }

        struct Draft {
            var node: Int
            var bus: Int
            var unit: AudioUnit
            var core: UnsafeMutablePointer<RealtimeCore>
            /// The unit's shape, read from the control side's copy (never through `core`, which the
            /// realtime side may be writing while a live update compiles).
            var shape: RealtimeResources
            var parent: Int
            var pullsItself: Bool
            var bindsInputs: Bool
            /// Source step of each input element (nil: pulled).
            var sources: [Int?] = []
        }
        var drafts: [Draft] = []
        var stepOf: [Key: Int] = [:]
        var firstStepOfNode: [Int: Int] = [:]
        var ops: [Int32] = []
        var pulledByItself: [Int: Int] = [:]  // node above a self-pulling unit → that unit's node

        func makeStep(_ node: Int, bus: Int, parent: Int) -> Int? {
            guard let unit = units[node], let core = unit.core, let shape = unit.resources else { return nil }
            let index = drafts.count
            drafts.append(
                Draft(
                    node: node, bus: bus, unit: unit, core: core, shape: shape, parent: parent,
                    pullsItself: unit.pullsInputsItself && node != head, bindsInputs: firstStepOfNode[node] == nil))
            stepOf[Key(node: node, bus: bus)] = index
            if firstStepOfNode[node] == nil { firstStepOfNode[node] = index }
            ops.append(Int32(index) << 1)
            return index
        }

        // The pull's walk, without recursion (graphs of thousands of nodes).
        guard let root = makeStep(head, bus: 0, parent: -1) else { return (nil, "the head is not initialized") }
        var stack: [(step: Int, next: Int)] = [(root, 0)]
        while let top = stack.last {
            // Fields read in place: copying a draft retains its unit and its sources.
            let inputCount = drafts[top.step].shape.inputCount
            if drafts[top.step].bindsInputs && top.next < inputCount {
                stack[stack.count - 1].next += 1
                guard let edge = feeding[AudioGraph.InputKey(node: drafts[top.step].node, input: top.next)] else { continue }
                guard stepOf[Key(node: edge.source, bus: edge.bus)] == nil else { continue }  // fan-out: rendered once
                guard let step = makeStep(edge.source, bus: edge.bus, parent: top.step) else {
                    return (nil, "node \(edge.source) is not initialized")
                }
                if drafts[step].pullsItself {
                    // It pulls what is above it through the units' own render (pull path).
                    ops.append(Int32(step) << 1 | 1)
                    var pending = [edge.source]
                    while let node = pending.popLast() {
                        for input in 0..<(units[node]?.elementCount(.input) ?? 0) {
                            guard let above = feeding[AudioGraph.InputKey(node: node, input: input)] else { continue }
                            if pulledByItself.updateValue(edge.source, forKey: above.source) == nil { pending.append(above.source) }
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
        for draft in drafts where !pulledByItself.isEmpty {
            if let puller = pulledByItself[draft.node] {
                return (
                    nil,
                    "\(draft.unit.name) (node \(draft.node)) feeds both \(units[puller]!.name) (node \(puller)), which pulls it itself, and the plan"
                )
            }
        }
        // Input sources, per unit (shared by the steps of a unit's elements).
        for index in drafts.indices where drafts[index].bindsInputs {
            let draft = drafts[index]
            drafts[index].sources = (0..<draft.shape.inputCount).map { input in
                guard !draft.pullsItself, let edge = feeding[AudioGraph.InputKey(node: draft.node, input: input)] else { return nil }
                return stepOf[Key(node: edge.source, bus: edge.bus)]
            }
        }
        func sources(of step: Int) -> [Int?] { drafts[firstStepOfNode[drafts[step].node]!].sources }

        // Where each step's output is last read (position of the reader's exit in `ops`).
        var exitAt = [Int](repeating: -1, count: drafts.count)
        for (position, op) in ops.enumerated() where op & 1 == 1 { exitAt[Int(op >> 1)] = position }
        var lastRead = [Int](repeating: -1, count: drafts.count)
        for step in drafts.indices {
            for case let source? in sources(of: step) { lastRead[source] = max(lastRead[source], exitAt[step]) }
        }

        // Buffers: one per live output, reused after the last reader; in place along chains.
        var channelsOfBuffer: [Int] = []
        var free: [Int: [Int]] = [:]
        var bufferOf = [Int](repeating: -1, count: drafts.count)
        var released = [Bool](repeating: false, count: drafts.count)
        var inPlace = 0
        var renderOrder: [(node: Int, bus: Int)] = []
        var bufferUse: [(writes: Int, reads: [(step: Int, buffer: Int)])] = []
        var renderIndex = [Int](repeating: -1, count: drafts.count)
        for (position, op) in ops.enumerated() where op & 1 == 1 {
            let step = Int(op >> 1)
            let draft = drafts[step]
            let channels = draft.shape.outputChannels[draft.bus]
            guard channels > 0 else { return (nil, "\(draft.unit.name) (node \(draft.node)) has an output of no channels") }
            let reads = sources(of: step).compactMap { $0 }
            if step != root {
                if draft.unit.canProcessInPlace && draft.shape.inputCount == 1 && draft.shape.outputChannels.count == 1,
                   let source = reads.first, lastRead[source] == position, !released[source], bufferOf[source] >= 0,
                   channelsOfBuffer[bufferOf[source]] == channels
                {
                    bufferOf[step] = bufferOf[source]
                    released[source] = true
                    inPlace += 1
                } else if let reused = free[channels]?.popLast() {
                    bufferOf[step] = reused
                } else {
                    bufferOf[step] = channelsOfBuffer.count
                    channelsOfBuffer.append(channels)
                }
            }
            renderIndex[step] = renderOrder.count
            renderOrder.append((draft.node, draft.bus))
            bufferUse.append((bufferOf[step], reads.map { (renderIndex[$0], bufferOf[$0]) }))
            for source in reads where lastRead[source] == position && !released[source] {
                released[source] = true
                if bufferOf[source] >= 0 { free[channelsOfBuffer[bufferOf[source]], default: []].append(bufferOf[source]) }
            }
        }

        let frames = drafts.map(\.shape.maximumFrames).max() ?? 0
        var buffers: [OwnedAudioBufferList] = []
        let placeholder: OwnedAudioBufferList
        do {
            placeholder = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 1)
            for channels in channelsOfBuffer { buffers.append(try OwnedAudioBufferList(channelCount: channels, frameCapacity: frames)) }
        } catch {
            return (nil, "no memory for the plan's buffers: \(error.message)")
        }
        var inputs: [Input] = []
        var firstInput: [Int: Int] = [:]
        var steps: [Step] = []
        for (index, draft) in drafts.enumerated() {
            if draft.bindsInputs {
                firstInput[draft.node] = inputs.count
                for (element, source) in draft.sources.enumerated() {
                    if let source {
                        let edge = feeding[AudioGraph.InputKey(node: draft.node, input: element)]!
                        inputs.append(
                            Input(
                                source: Unmanaged.passUnretained(units[edge.source]!).toOpaque(), bus: edge.bus,
                                list: buffers[bufferOf[source]].list, direct: false))
                    } else {
                        inputs.append(Input(source: nil, bus: 0, list: placeholder.list, direct: false))
                    }
                }
            }
            steps.append(
                Step(
                    unit: Unmanaged.passUnretained(draft.unit), core: draft.core, bus: draft.bus,
                    output: index == root ? placeholder.list : buffers[bufferOf[index]].list,
                    isHead: index == root, pullsItself: draft.pullsItself,
                    servesPulls: index == root && draft.unit.pullsInputsItself, bindsInputs: draft.bindsInputs,
                    firstInput: 0, parent: draft.parent,
                    canBeLean: leanSteps && !draft.pullsItself && !(index == root && draft.unit.pullsInputsItself)))
        }
        for index in steps.indices { steps[index].firstInput = firstInput[drafts[index].node] ?? 0 }
        let plan = RenderPlan(
            steps: steps, inputs: inputs, ops: ops, buffers: buffers + [placeholder], renderOrder: renderOrder, bufferUse: bufferUse,
            inPlaceSteps: inPlace, steadyFrameLimit: drafts.map(\.shape.maximumFrames).min() ?? 0)
        return (plan, nil)
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
        return .noError
    }

    /// A cycle in which every step is steady: each step's lean render, in render order.
    private func renderSteady(timeStamp: AudioTimeStamp, frameCount: Int, headOutput: AudioBufferList) -> AudioError.Code {
        for position in 0..<stepCount {
            let index = Int(exits[position])
            let step = steps + index
            let output = step.pointee.isHead ? headOutput : step.pointee.output.frames(from: 0, count: frameCount)
            let status = step.pointee.unit._withUnsafeGuaranteedRef {
                $0.renderPlannedLean(
                    step.pointee.core, timeStamp: timeStamp, bus: step.pointee.bus, frameCount: frameCount, output: output,
                    inputs: inputs + step.pointee.firstInput, bindsInputs: step.pointee.bindsInputs)
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
