import SonoraCore
import SonoraTestSupport
import Testing
@_spi(Benchmark) @testable import SonoraUnits

/// A graph shape and what to do before each cycle, built fresh for each run.
private struct LeanRig {
    var graph: AudioGraph
    var script: (Int) throws -> Void = { _ in }
    var log: () -> [String] = { [] }
}

private struct LeanRun {
    var output: [[Float]]
    var log: [String]
    /// Lean steps taken in each cycle.
    var leanPerCycle: [Int]
    var steps: Int
}

/// Renders `cycles` cycles through the graph's plan, with lean steps allowed or not.
private func render(_ rig: LeanRig, lean: Bool, cycles: Int, frames: Int) throws -> LeanRun {
    rig.graph.plansLeanSteps = lean
    try rig.graph.initialize()
    let format = try rig.graph.unit(rig.graph.outputNode!).streamFormat(scope: .output, element: 0)
    let buffers = try OwnedAudioBufferList(channelCount: Int(format.channelsPerFrame), frameCapacity: frames)
    var output = Array(repeating: [Float](), count: Int(format.channelsPerFrame))
    var leanPerCycle: [Int] = []
    for cycle in 0..<cycles {
        try rig.script(cycle)
        let before = rig.graph.planInUse?.leanStepsTaken ?? 0
        var flags = RenderActionFlags()
        let status = rig.graph.render(
            flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * frames)), frameCount: frames,
            into: buffers.list(frameCount: frames))
        #expect(status == .noError, "cycle \(cycle)")
        // A live update swaps the plan (whose count starts at 0) during the render.
        let after = rig.graph.planInUse?.leanStepsTaken ?? 0
        leanPerCycle.append(after >= before ? after - before : after)
        for channel in output.indices { output[channel] += buffers.list(frameCount: frames)[channel] }
    }
    let steps = rig.graph.plan?.stepCount ?? 0
    let log = rig.log()
    rig.graph.uninitialize()
    return LeanRun(output: output, log: log, leanPerCycle: leanPerCycle, steps: steps)
}

/// Builds the shape twice and renders it with lean steps and with the full step only:
/// the same samples (exactly) and the same log. Returns the lean run.
@discardableResult
private func expectLeanEqualsFull(cycles: Int = 40, frames: Int = 128, _ build: () throws -> LeanRig) throws -> LeanRun {
    let full = try render(try build(), lean: false, cycles: cycles, frames: frames)
    #expect(full.leanPerCycle.allSatisfy { $0 == 0 }, "with lean steps off, none is taken")
    let lean = try render(try build(), lean: true, cycles: cycles, frames: frames)
    expectSameSamples(lean.output, full.output)
    #expect(lean.log == full.log)
    return lean
}

@Suite("Render plan lean steps equal the full step", .serialized)
struct RenderPlanLeanStepTests {
    /// Events at offsets, a ramp, pan, bypass on and off: the units they touch take the full
    /// step while they are in play and the lean one again after, sample for sample the same.
    @Test func switchingBetweenLeanAndFullOnEventsRampsAndBypass() throws {
        let run = try expectLeanEqualsFull(cycles: 48) {
            let graph = AudioGraph()
            let gains = try (0..<8).map { try gainUnit(Float($0 % 3) - 1) }
            var previous = graph.addNode(try toneUnit())
            for unit in gains {
                let node = graph.addNode(unit)
                try graph.connect(previous, bus: 0, to: node, input: 0)
                previous = node
            }
            try graph.connect(previous, bus: 0, to: graph.addNode(GenericOutputUnit()), input: 0)
            return LeanRig(graph: graph) { cycle in
                if cycle == 4 { try gains[1].setParameter(GainUnit.Parameter.gain, to: -4, bufferOffset: 37) }
                if cycle == 10 { try gains[2].rampParameter(GainUnit.Parameter.gain, to: -20, duration: 300) }
                if cycle == 16 { try gains[5].setParameter(GainUnit.Parameter.pan, to: 0.5, bufferOffset: 100) }
                if cycle == 20 { try gains[3].setBypass(true) }
                if cycle == 30 { try gains[3].setBypass(false) }
                if cycle == 36 { try gains[6].setParameter(GainUnit.Parameter.gain, to: 3, bufferOffset: 500) }  // past the cycle
            }
        }
        let all = run.steps  // tone, 8 gains, output: all may be lean
        #expect(all == 10)
        #expect(run.leanPerCycle[0] == all && run.leanPerCycle[3] == all, "a steady graph is all lean")
        #expect(run.leanPerCycle[4] == all - 1, "the unit with an event takes the full step")
        #expect(run.leanPerCycle[5] == all, "and the lean one again the cycle after")
        #expect(run.leanPerCycle[10] == all - 1 && run.leanPerCycle[11] == all - 1, "a ramp keeps its unit on the full step")
        #expect(run.leanPerCycle[19] == all, "the ramp has ended (300 frames)")
        #expect((20..<30).allSatisfy { run.leanPerCycle[$0] == all - 1 }, "a bypassed unit takes the full step")
        #expect(run.leanPerCycle[31] == all)
    }

    /// A render notification added mid-run and removed again: its unit takes the full step
    /// (pre and post notifications in the pull's order) only while it is there.
    @Test func notificationsAppearAndDisappear() throws {
        final class Note: RenderCallbackTarget {
            var lines: [String] = []
            override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
                let phase = request.pointee.flags.contains(.preRender) ? "pre" : "post"
                lines.append("\(phase) \(request.pointee.timeStamp.sampleTime) \(request.pointee.buffers.samples(0)[3])")
                return .noError
            }
        }
        let run = try expectLeanEqualsFull(cycles: 20) {
            let graph = AudioGraph()
            let note = Note()
            let first = try gainUnit(-2)
            let second = try gainUnit(-5)
            let source = graph.addNode(try toneUnit(330))
            let a = graph.addNode(first)
            let b = graph.addNode(second)
            try graph.connect(source, bus: 0, to: a, input: 0)
            try graph.connect(a, bus: 0, to: b, input: 0)
            try graph.connect(b, bus: 0, to: graph.addNode(GenericOutputUnit()), input: 0)
            var index: Int?
            return LeanRig(graph: graph, script: { cycle in
                if cycle == 5 { index = try second.addRenderNotify(RenderCallback(note), keeping: note) }
                if cycle == 12, let index { second.removeRenderNotify(index) }
            }, log: { note.lines })
        }
        #expect(run.log.count == 14, "7 cycles of pre and post")
        #expect(run.leanPerCycle[4] == 4)
        #expect((5..<12).allSatisfy { run.leanPerCycle[$0] == 3 })
        #expect(run.leanPerCycle[13] == 4)
    }

    /// Fan-out, merges, a mixer fed by callbacks and connections, a live update that
    /// crossfades: the crossfading input's unit takes the full step until the fade ends.
    @Test func fanOutMergesCallbacksAndCrossfades() throws {
        let run = try expectLeanEqualsFull(cycles: 30, frames: 32) {
            let graph = AudioGraph()
            let source = graph.addNode(try toneUnit(300))
            let shared = graph.addNode(try gainUnit(-3))
            let left = try gainUnit(-6)
            let leftNode = graph.addNode(left)
            let rightNode = graph.addNode(try gainUnit(2))
            let mixerUnit = MultiChannelMixerUnit(inputs: 4)
            let mixer = graph.addNode(mixerUnit)
            let output = graph.addNode(GenericOutputUnit())
            try graph.connect(source, bus: 0, to: shared, input: 0)
            try graph.connect(shared, bus: 0, to: leftNode, input: 0)
            try graph.connect(shared, bus: 0, to: rightNode, input: 0)
            try graph.connect(leftNode, bus: 0, to: mixer, input: 0)
            try graph.connect(rightNode, bus: 0, to: mixer, input: 1)
            try graph.connect(shared, bus: 0, to: mixer, input: 2)
            try graph.setRenderCallback(ConstantSource(0.125), node: mixer, input: 3)
            try graph.connect(mixer, bus: 0, to: output, input: 0)
            return LeanRig(graph: graph) { cycle in
                if cycle == 4 { try left.rampParameter(GainUnit.Parameter.gain, to: 0, duration: 50) }
                if cycle == 9 { try mixerUnit.setParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 3, to: 0.5, bufferOffset: 9) }
                if cycle == 14 {  // a gain inserted before the output: the output's input crossfades (64 frames)
                    let node = graph.addNode(try gainUnit(-12))
                    try graph.connect(mixer, bus: 0, to: node, input: 0)
                    try graph.connect(node, bus: 0, to: output, input: 0)
                    try graph.update()
                }
            }
        }
        #expect(run.leanPerCycle[2] == 6, "tone, three gains, mixer, output")
        #expect(run.leanPerCycle[14] < 7 && run.leanPerCycle[15] < 7, "the output's crossfade takes the full step")
        #expect(run.leanPerCycle[20] == 7, "after the fade, all 7 steps are lean")
    }
}

@Suite("Realtime core layout")
struct RealtimeCoreLayoutTests {
    /// What a steady render reads sits in the core's first cache line (the core starts its
    /// 64-byte-aligned block), so a large graph touches one line per unit core for it.
    @Test func whatALeanRenderReadsIsOnTheFirstLine() throws {
        let paths: [PartialKeyPath<RealtimeCore>] = [
            \.inputCount, \.inputLists, \.ownedInputLists, \.inputSources, \.ramps, \.nextScratch,
            \.lastPulledSampleTime, \.cachesOutput, \.rampsActive, \.bypass,
        ]
        for path in paths {
            let offset = try #require(MemoryLayout<RealtimeCore>.offset(of: path))
            #expect(offset < 64, "\(path) at byte \(offset)")  // aligned fields of ≤ 8 bytes: then it ends within the line
        }
    }

    /// What a direct steady `AudioUnit.render` reads (its checks, the command check, `isSteady`,
    /// the pull check) sits in the core's first two lines.
    @Test func whatADirectSteadyRenderReadsIsOnTheFirstTwoLines() throws {
        let paths: [PartialKeyPath<RealtimeCore>] = [
            \.maximumFrames, \.outputCount, \.outputChannels, \.commandsSent, \.commandsTaken, \.eventCount,
            \.rampsActive, \.notifyCount, \.bypass, \.fadingInputs, \.cachesOutput, \.processesInPlace,
            \.pullsOwnInputs, \.lastPulledSampleTime, \.lastPulledFrames, \.inputCount, \.inputLists,
            \.inputSources, \.nextScratch,
        ]
        for path in paths {
            let offset = try #require(MemoryLayout<RealtimeCore>.offset(of: path))
            #expect(offset < 128, "\(path) at byte \(offset)")
        }
    }
}

@Suite("Render plan lean steps on the realtime thread", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct RenderPlanLeanStepAllocationTests {
    /// A steady 64-gain chain and mixer render 5,000 cycles by lean steps only, with no heap call.
    @Test func leanStepsRenderWithoutHeapCalls() throws {
        let graph = AudioGraph()
        func add(_ unit: AudioUnit) throws -> AudioGraph.Node {
            try unit.setMaximumFramesPerSlice(128)
            return graph.addNode(unit)
        }
        var previous = try add(try toneUnit())
        let shared = previous
        for index in 0..<64 {
            let node = try add(try gainUnit(Float(index % 2)))
            try graph.connect(previous, bus: 0, to: node, input: 0)
            previous = node
        }
        let mixer = try add(MultiChannelMixerUnit(inputs: 3))
        try graph.connect(previous, bus: 0, to: mixer, input: 0)
        try graph.connect(shared, bus: 0, to: mixer, input: 1)
        try graph.setRenderCallback(ConstantSource(0.1), node: mixer, input: 2)
        try graph.connect(mixer, bus: 0, to: try add(GenericOutputUnit()), input: 0)
        try graph.initialize()
        let plan = try #require(graph.plan)
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 128)
        let list = buffers.list
        func cycle(_ index: Int) -> AudioError.Code {
            var flags = RenderActionFlags()
            return graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 128)), frameCount: 128, into: list)
        }
        for index in 0..<50 { #expect(cycle(index) == .noError) }
        let leanBefore = plan.leanStepsTaken
        let steadyBefore = plan.steadyCycles
        var heapCalls = 0
        var failures = 0
        for index in 50..<5050 {
            AllocationCounter.begin()
            if cycle(index) != .noError { failures += 1 }
            heapCalls += AllocationCounter.end()
        }
        #expect(failures == 0)
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 5,000 lean cycles")
        #expect(plan.leanStepsTaken - leanBefore == 5000 * plan.stepCount, "every step of every cycle was lean")
        // Other suites' units bump the command epoch now and then; most cycles still skip every check.
        #expect(plan.steadyCycles - steadyBefore > 0, "steady cycles render without looking at any step")
        #expect(list[0].contains { $0 != 0 })
        graph.uninitialize()
    }
}
