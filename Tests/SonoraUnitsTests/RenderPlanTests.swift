import Foundation
import SonoraCore
import SonoraHAL
import SonoraTestSupport
import Synchronization
import Testing
@testable import SonoraUnits

/// One graph shape, built fresh for each run, with what to do before each cycle.
private struct Rig {
    var graph: AudioGraph
    /// Called before cycle `index` renders (parameter events, bypass, live updates).
    var script: (Int) throws -> Void = { _ in }
    /// What the shape logged (notifications), compared between the runs.
    var log: () -> [String] = { [] }
}

/// Renders `cycles` cycles of `frames` frames, starting at sample 0.
private typealias PlanFacts = (steps: Int, buffers: Int, inPlace: Int, refusal: String?, planned: Bool)

private func run(_ rig: Rig, plan: Bool, cycles: Int, frames: Int) throws -> (output: [[Float]], log: [String], facts: PlanFacts) {
    rig.graph.rendersWithPlan = plan
    try rig.graph.initialize()
    let compiled = rig.graph.plan
    let facts = (
        compiled?.stepCount ?? 0, compiled?.bufferCount ?? 0, compiled?.inPlaceSteps ?? 0, rig.graph.planRefusal, compiled != nil
    )
    let format = try rig.graph.unit(rig.graph.outputNode!).streamFormat(scope: .output, element: 0)
    let buffers = try OwnedAudioBufferList(channelCount: Int(format.channelsPerFrame), frameCapacity: frames)
    var output = Array(repeating: [Float](), count: Int(format.channelsPerFrame))
    for cycle in 0..<cycles {
        try rig.script(cycle)
        var flags = RenderActionFlags()
        let status = rig.graph.render(
            flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * frames)), frameCount: frames,
            into: buffers.list(frameCount: frames))
        #expect(status == .noError, "cycle \(cycle)")
        for channel in output.indices { output[channel] += buffers.list(frameCount: frames)[channel] }
    }
    let log = rig.log()
    rig.graph.uninitialize()
    return (output, log, facts)
}

/// Builds the shape twice, renders it with its plan and by recursive pull, and expects
/// the same samples (exactly) and the same log. Returns the planned graph's plan facts.
@discardableResult
private func expectPlanEqualsPull(
    cycles: Int = 40, frames: Int = 128, planned: Bool = true, _ build: () throws -> Rig
) throws -> PlanFacts {
    let pulled = try run(try build(), plan: false, cycles: cycles, frames: frames)
    #expect(!pulled.facts.planned)
    let withPlan = try run(try build(), plan: true, cycles: cycles, frames: frames)
    let facts = withPlan.facts
    #expect(facts.planned == planned, "refusal: \(facts.refusal ?? "none")")
    expectSameSamples(withPlan.output, pulled.output)
    #expect(withPlan.log == pulled.log)
    return facts
}

@Suite("Render plan equals the recursive pull", .serialized)
struct RenderPlanEquivalenceTests {
    @Test func chainWithParameterEventsRampsAndBypass() throws {
        let facts = try expectPlanEqualsPull {
            let graph = AudioGraph()
            let gains = try (0..<8).map { try gainUnit(Float($0 % 3) - 1) }
            var previous = graph.addNode(try toneUnit())
            for unit in gains {
                let node = graph.addNode(unit)
                try graph.connect(previous, bus: 0, to: node, input: 0)
                previous = node
            }
            try graph.connect(previous, bus: 0, to: graph.addNode(GenericOutputUnit()), input: 0)
            return Rig(graph: graph) { cycle in
                if cycle % 5 == 1 { try gains[cycle % 8].setParameter(GainUnit.Parameter.gain, to: Float(cycle % 7) - 3, bufferOffset: cycle % 128) }
                if cycle == 10 { try gains[2].rampParameter(GainUnit.Parameter.gain, to: -20, duration: 300) }
                if cycle == 12 { try gains[5].setParameter(GainUnit.Parameter.pan, to: 0.5) }
                if cycle == 20 { try gains[3].setBypass(true) }
                if cycle == 30 { try gains[3].setBypass(false) }
            }
        }
        #expect(facts.steps == 10)
        #expect(facts.buffers == 1 && facts.inPlace == 8, "a chain of in-place units works in one buffer")
    }

    @Test func fanOutAndMerges() throws {
        try expectPlanEqualsPull {
            let graph = AudioGraph()
            let source = graph.addNode(try toneUnit(300))
            let shared = graph.addNode(try gainUnit(-3))
            let left = try gainUnit(-6)
            let leftNode = graph.addNode(left)
            let rightNode = graph.addNode(try gainUnit(2))
            let mixer = graph.addNode(MultiChannelMixerUnit(inputs: 3))
            let output = graph.addNode(GenericOutputUnit())
            try graph.connect(source, bus: 0, to: shared, input: 0)
            try graph.connect(shared, bus: 0, to: leftNode, input: 0)
            try graph.connect(shared, bus: 0, to: rightNode, input: 0)
            try graph.connect(leftNode, bus: 0, to: mixer, input: 0)
            try graph.connect(rightNode, bus: 0, to: mixer, input: 1)
            try graph.connect(shared, bus: 0, to: mixer, input: 2)
            try graph.connect(mixer, bus: 0, to: output, input: 0)
            return Rig(graph: graph) { cycle in
                if cycle == 7 { try left.rampParameter(GainUnit.Parameter.gain, to: 0, duration: 200) }
            }
        }
    }

    @Test func splitterDelayCallbacksAndMeter() throws {
        try expectPlanEqualsPull {
            let graph = AudioGraph()
            let counting = ConstantSource(0, counting: true)
            let constant = ConstantSource(0.25)
            let splitter = graph.addNode(SplitterUnit(outputs: 2))
            let gainNode = graph.addNode(try gainUnit(-12))
            let delay = SampleDelayUnit()
            try delay.setParameter(SampleDelayUnit.Parameter.delayFrames, to: 37)
            let delayNode = graph.addNode(delay)
            let mixerUnit = MultiChannelMixerUnit(inputs: 3)
            let mixer = graph.addNode(mixerUnit)
            let meter = graph.addNode(MeterUnit())
            let output = graph.addNode(GenericOutputUnit())
            try graph.setRenderCallback(counting, node: splitter, input: 0)
            try graph.connect(splitter, bus: 0, to: gainNode, input: 0)
            try graph.connect(splitter, bus: 1, to: delayNode, input: 0)
            try graph.connect(gainNode, bus: 0, to: mixer, input: 0)
            try graph.connect(delayNode, bus: 0, to: mixer, input: 1)
            try graph.setRenderCallback(constant, node: mixer, input: 2)
            try graph.connect(mixer, bus: 0, to: meter, input: 0)
            try graph.connect(meter, bus: 0, to: output, input: 0)
            return Rig(graph: graph, script: { cycle in
                if cycle == 5 {
                    try mixerUnit.setParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 1, to: 0.3, bufferOffset: 64)
                }
            }, log: { ["\(counting.calls) \(constant.calls)"] })
        }
    }

    @Test func aSubgraph() throws {
        try expectPlanEqualsPull {
            let inner = AudioGraph()
            let trim = try gainUnit(-6)
            let trimNode = inner.addNode(trim)
            let meterNode = inner.addNode(MeterUnit())
            let innerOut = inner.addNode(GenericOutputUnit())
            try inner.connect(trimNode, bus: 0, to: meterNode, input: 0)
            try inner.connect(meterNode, bus: 0, to: innerOut, input: 0)
            let subgraph = try SubgraphUnit(graph: inner, endpoints: [(trimNode, 0)], name: "strip")
            let outer = AudioGraph()
            let source = outer.addNode(try toneUnit(500))
            let strip = outer.addNode(subgraph)
            let makeUp = try gainUnit(6)
            let makeUpNode = outer.addNode(makeUp)
            try outer.connect(source, bus: 0, to: strip, input: 0)
            try outer.connect(strip, bus: 0, to: makeUpNode, input: 0)
            try outer.connect(makeUpNode, bus: 0, to: outer.addNode(GenericOutputUnit()), input: 0)
            return Rig(graph: outer) { cycle in
                if cycle == 3 { try makeUp.setParameter(GainUnit.Parameter.gain, to: 0, bufferOffset: 100) }
                if cycle == 9 { try trim.rampParameter(GainUnit.Parameter.gain, to: -20, duration: 500) }
            }
        }
    }

    @Test func latencyCompensation() throws {
        try expectPlanEqualsPull(cycles: 12) {
            let graph = AudioGraph()
            let impulses = ToneGeneratorUnit()
            try impulses.setParameter(ToneGeneratorUnit.Parameter.waveform, to: Float(ToneGeneratorUnit.Waveform.impulse.rawValue))
            try impulses.setParameter(ToneGeneratorUnit.Parameter.level, to: 0)
            let source = graph.addNode(impulses)
            let split = graph.addNode(SplitterUnit(outputs: 2))
            let slow = SampleDelayUnit()
            try slow.setParameter(SampleDelayUnit.Parameter.delayFrames, to: 100)
            let slowNode = graph.addNode(slow)
            let mixer = graph.addNode(MultiChannelMixerUnit(inputs: 2))
            try graph.connect(source, bus: 0, to: split, input: 0)
            try graph.connect(split, bus: 0, to: slowNode, input: 0)
            try graph.connect(slowNode, bus: 0, to: mixer, input: 0)
            try graph.connect(split, bus: 1, to: mixer, input: 1)
            try graph.connect(mixer, bus: 0, to: graph.addNode(GenericOutputUnit()), input: 0)
            try graph.compensateLatency()
            return Rig(graph: graph)
        }
    }

    @Test func liveUpdatesCrossfade() throws {
        try expectPlanEqualsPull(cycles: 30, frames: 32) {
            let graph = AudioGraph()
            let source = graph.addNode(try toneUnit(700))
            let first = graph.addNode(try gainUnit(-3))
            let output = graph.addNode(GenericOutputUnit())
            try graph.connect(source, bus: 0, to: first, input: 0)
            try graph.connect(first, bus: 0, to: output, input: 0)
            var inserted: AudioGraph.Node?
            return Rig(graph: graph) { cycle in
                if cycle == 5 {  // insert a gain after `first`: the output crossfades to it
                    let node = graph.addNode(try gainUnit(-12))
                    try graph.connect(first, bus: 0, to: node, input: 0)
                    try graph.connect(node, bus: 0, to: output, input: 0)
                    try graph.update()
                    inserted = node
                }
                if cycle == 12, let inserted {  // and take it out again
                    try graph.removeNode(inserted)
                    try graph.connect(first, bus: 0, to: output, input: 0)
                    try graph.update()
                }
                if cycle == 20 {  // a callback replaces the tone
                    try graph.setRenderCallback(ConstantSource(0.5), node: first, input: 0)
                    try graph.update()
                }
            }
        }
    }

    @Test func renderNotificationsInThePullsOrder() throws {
        final class Log: @unchecked Sendable {
            var lines: [String] = []
        }
        final class Note: RenderCallbackTarget {
            let name: String
            let log: Log
            init(_ name: String, _ log: Log) {
                self.name = name
                self.log = log
            }
            override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
                let phase = request.pointee.flags.contains(.preRender) ? "pre" : "post"
                log.lines.append("\(name) \(phase) bus \(request.pointee.bus)")
                return .noError
            }
        }
        try expectPlanEqualsPull(cycles: 4) {
            let graph = AudioGraph()
            let log = Log()
            let units: [(String, AudioUnit)] = [
                ("tone", try toneUnit()), ("split", SplitterUnit(outputs: 2)), ("a", try gainUnit(-1)), ("b", try gainUnit(-2)),
                ("mixer", MultiChannelMixerUnit(inputs: 2)), ("out", GenericOutputUnit()),
            ]
            var nodes: [String: AudioGraph.Node] = [:]
            for (name, unit) in units {
                let note = Note(name, log)
                try unit.addRenderNotify(RenderCallback(note), keeping: note)
                nodes[name] = graph.addNode(unit)
            }
            try graph.connect(nodes["tone"]!, bus: 0, to: nodes["split"]!, input: 0)
            try graph.connect(nodes["split"]!, bus: 0, to: nodes["a"]!, input: 0)
            try graph.connect(nodes["split"]!, bus: 1, to: nodes["b"]!, input: 0)
            try graph.connect(nodes["a"]!, bus: 0, to: nodes["mixer"]!, input: 0)
            try graph.connect(nodes["b"]!, bus: 0, to: nodes["mixer"]!, input: 1)
            try graph.connect(nodes["mixer"]!, bus: 0, to: nodes["out"]!, input: 0)
            return Rig(graph: graph, log: { log.lines })
        }
    }

    @Test func aUnitThatPullsItselfIsAStepOfThePlan() throws {
        let facts = try expectPlanEqualsPull {
            let graph = AudioGraph()
            let slowTone = try toneUnit(1000)
            try slowTone.setSampleRate(44100, scope: .global, element: 0)
            let converter = ConverterUnit()
            try converter.setStreamFormat(.canonical(sampleRate: 44100, channels: 2), scope: .input, element: 0)
            let slow = graph.addNode(slowTone)
            let convert = graph.addNode(converter)
            let level = graph.addNode(try gainUnit(-6))
            try graph.connect(slow, bus: 0, to: convert, input: 0)
            try graph.connect(convert, bus: 0, to: level, input: 0)
            try graph.connect(level, bus: 0, to: graph.addNode(GenericOutputUnit()), input: 0)
            return Rig(graph: graph)
        }
        #expect(facts.steps == 3, "the converter's source renders inside its pull, not as a step")
    }

    @Test func aGraphThatCannotBePlannedRendersByPull() throws {
        let facts = try expectPlanEqualsPull(planned: false) {
            let graph = AudioGraph()
            let slowTone = try toneUnit(1000)
            try slowTone.setSampleRate(44100, scope: .global, element: 0)
            let converter = ConverterUnit()
            try converter.setStreamFormat(.canonical(sampleRate: 44100, channels: 2), scope: .input, element: 0)
            let resampler = ConverterUnit()
            try resampler.setStreamFormat(.canonical(sampleRate: 44100, channels: 2), scope: .output, element: 0)
            let slow = graph.addNode(slowTone)
            let convert = graph.addNode(converter)
            let back = graph.addNode(resampler)
            let mixer = graph.addNode(MultiChannelMixerUnit(inputs: 2))
            try graph.connect(slow, bus: 0, to: convert, input: 0)
            try graph.connect(convert, bus: 0, to: mixer, input: 0)
            // The 48 kHz converter output also feeds a unit that pulls it itself.
            try graph.connect(convert, bus: 0, to: back, input: 0)
            let again = ConverterUnit()
            try again.setStreamFormat(.canonical(sampleRate: 44100, channels: 2), scope: .input, element: 0)
            let up = graph.addNode(again)
            try graph.connect(back, bus: 0, to: up, input: 0)
            try graph.connect(up, bus: 0, to: mixer, input: 1)
            try graph.connect(mixer, bus: 0, to: graph.addNode(GenericOutputUnit()), input: 0)
            return Rig(graph: graph)
        }
        #expect(facts.refusal?.contains("pulls it itself") == true, "\(facts.refusal ?? "")")
    }
}

@Suite("Render plan buffers", .serialized)
struct RenderPlanBufferTests {
    /// Fan-out and merges around in-place units: every read finds the buffer still
    /// holding what its source step wrote (no step wrote over it in between).
    @Test func inPlaceNeverOverwritesABufferStillToBeRead() throws {
        let graph = AudioGraph()
        let source = graph.addNode(try toneUnit())
        let shared = graph.addNode(try gainUnit(-1))
        let chainA = try (0..<3).map { _ in graph.addNode(try gainUnit(-2)) }
        let chainB = try (0..<2).map { _ in graph.addNode(try gainUnit(1)) }
        let mixer = graph.addNode(MultiChannelMixerUnit(inputs: 3))
        let post = graph.addNode(try gainUnit(0))
        let output = graph.addNode(GenericOutputUnit())
        try graph.connect(source, bus: 0, to: shared, input: 0)
        try graph.connect(shared, bus: 0, to: chainA[0], input: 0)
        try graph.connect(chainA[0], bus: 0, to: chainA[1], input: 0)
        try graph.connect(chainA[1], bus: 0, to: chainA[2], input: 0)
        try graph.connect(shared, bus: 0, to: chainB[0], input: 0)
        try graph.connect(chainB[0], bus: 0, to: chainB[1], input: 0)
        try graph.connect(chainA[2], bus: 0, to: mixer, input: 0)
        try graph.connect(chainB[1], bus: 0, to: mixer, input: 1)
        try graph.connect(shared, bus: 0, to: mixer, input: 2)
        try graph.connect(mixer, bus: 0, to: post, input: 0)
        try graph.connect(post, bus: 0, to: output, input: 0)
        try graph.initialize()
        let plan = try #require(graph.plan)
        var holder: [Int: Int] = [:]  // buffer → the step whose output it holds
        for (index, use) in plan.bufferUse.enumerated() {
            for read in use.reads {
                #expect(holder[read.buffer] == read.step, "step \(index) reads buffer \(read.buffer), overwritten by step \(holder[read.buffer] ?? -1)")
            }
            if use.writes >= 0 { holder[use.writes] = index }
        }
        #expect(plan.inPlaceSteps >= 3, "chain links after the fan-out work in place")
        #expect(plan.bufferCount <= 4)
    }
}

@Suite("Render plan on the realtime thread", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct RenderPlanAllocationTests {
    @Test func aPlannedGraphRendersWithoutHeapCalls() throws {
        let graph = AudioGraph()
        func add(_ unit: AudioUnit) throws -> AudioGraph.Node {
            try unit.setMaximumFramesPerSlice(128)
            return graph.addNode(unit)
        }
        let gains = try (0..<64).map { try gainUnit(Float($0 % 2)) }
        var previous = try add(try toneUnit())
        let shared = previous
        for unit in gains {
            let node = try add(unit)
            try graph.connect(previous, bus: 0, to: node, input: 0)
            previous = node
        }
        let mixerUnit = MultiChannelMixerUnit(inputs: 3)
        let mixer = try add(mixerUnit)
        try graph.connect(previous, bus: 0, to: mixer, input: 0)
        try graph.connect(shared, bus: 0, to: mixer, input: 1)
        let source = ConstantSource(0.1)
        try graph.setRenderCallback(source, node: mixer, input: 2)
        try graph.connect(mixer, bus: 0, to: try add(GenericOutputUnit()), input: 0)
        try graph.initialize()
        #expect(graph.plan != nil)
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 128)
        let list = buffers.list
        func cycle(_ index: Int) -> AudioError.Code {
            var flags = RenderActionFlags()
            return graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 128)), frameCount: 128, into: list)
        }
        for index in 0..<50 { #expect(cycle(index) == .noError) }
        var heapCalls = 0
        var failures = 0
        for index in 50..<5050 {
            if index % 100 == 0 {
                try gains[index % 64].setParameter(GainUnit.Parameter.gain, to: Float(index % 12) - 6, bufferOffset: index % 128)
                try mixerUnit.rampParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 1, to: Float(index / 100 % 10) / 10, duration: 200)
            }
            if index == 2000 { try gains[7].setBypass(true) }
            AllocationCounter.begin()
            if cycle(index) != .noError { failures += 1 }
            heapCalls += AllocationCounter.end()
        }
        #expect(failures == 0)
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 5,000 planned cycles")
        #expect(list[0].contains { $0 != 0 })
    }
}

@Suite("Render plan hand-over", .serialized)
struct RenderPlanHandOverTests {
    /// Another thread renders while this one inserts and removes a node 40 times: every
    /// update reaches the realtime side, no render fails, and the last plan is the one used.
    @Test func updatesReachTheRealtimeSideWhileItRenders() throws {
        let graph = AudioGraph()
        let source = ConstantSource(0.5)
        let first = graph.addNode(try gainUnit(0))
        let output = graph.addNode(GenericOutputUnit())
        try graph.setRenderCallback(source, node: first, input: 0)
        try graph.connect(first, bus: 0, to: output, input: 0)
        try graph.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 64)
        let list = buffers.list
        final class Shared: Sendable {
            let stop = Atomic<Bool>(false)
            let failures = Atomic<Int>(0)
            let cycles = Atomic<Int>(0)
            /// Set as the thread's last act: waited on with acquire ordering, so the reads and
            /// `uninitialize()` after it happen after the thread's last render (Thread's
            /// `isFinished` is not a synchronization ThreadSanitizer can see).
            let finished = Atomic<Bool>(false)
        }
        let shared = Shared()
        let renderer = Thread { [shared] in
            var index = 0
            while !shared.stop.load(ordering: .acquiring) {
                var flags = RenderActionFlags()
                let status = graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 64)), frameCount: 64, into: list)
                if status != .noError { shared.failures.add(1, ordering: .relaxed) }
                index += 1
                shared.cycles.store(index, ordering: .releasing)
            }
            shared.finished.store(true, ordering: .releasing)
        }
        renderer.start()
        defer { shared.stop.store(true, ordering: .releasing) }
        func waitFor(_ updates: Int) {
            let deadline = Date().addingTimeInterval(20)
            while graph.appliedUpdates < updates && Date() < deadline { usleep(100) }
        }
        var updates = 0
        for round in 0..<40 {
            let inserted = graph.addNode(try gainUnit(-6))
            try graph.connect(first, bus: 0, to: inserted, input: 0)
            try graph.connect(inserted, bus: 0, to: output, input: 0)
            try graph.update()
            updates += 1
            waitFor(updates)
            #expect(graph.appliedUpdates == updates, "round \(round): insert applied")
            #expect(graph.plan?.stepCount == 3)
            #expect(graph.planInUse === graph.plan, "round \(round): the realtime side renders the new plan")
            try graph.removeNode(inserted)
            try graph.connect(first, bus: 0, to: output, input: 0)
            try graph.update()
            updates += 1
            waitFor(updates)
            #expect(graph.appliedUpdates == updates, "round \(round): removal applied")
            #expect(graph.plan?.stepCount == 2)
            #expect(graph.planInUse === graph.plan, "round \(round): the realtime side renders the new plan")
        }
        // A few cycles after the last fade: the output is the source through the first gain only.
        let seen = shared.cycles.load(ordering: .acquiring)
        let deadline = Date().addingTimeInterval(20)
        while shared.cycles.load(ordering: .acquiring) < seen + 10 && Date() < deadline { usleep(100) }
        shared.stop.store(true, ordering: .releasing)
        while !shared.finished.load(ordering: .acquiring) { usleep(100) }
        #expect(shared.failures.load(ordering: .relaxed) == 0)
        #expect(list[0].allSatisfy { $0 == 0.5 } && list[1].allSatisfy { $0 == 0.5 })
        graph.uninitialize()
    }
}

/// A live graph's head is the I/O unit, which pulls its input itself (in pull mode): the
/// plan renders that input as steps and serves the I/O unit's pull from them, so device
/// graphs (the appliance's) take the plan too.
@Suite("Render plan with the I/O unit at the head", .serialized)
struct RenderPlanIOHeadTests {
    private func ioHeadedRig(ramps: Bool) throws -> Rig {
        let graph = AudioGraph()
        let device = try TimerDevice(configuration: AudioDeviceConfiguration(sampleRate: 48000, inputChannels: 0), mode: .offline)
        let io = IOUnit()
        try io.setDevice(device)
        let level = try gainUnit(-6)
        let source = graph.addNode(try toneUnit(440))
        let trim = graph.addNode(level)
        let left = graph.addNode(try gainUnit(-3))
        let right = graph.addNode(try gainUnit(-9))
        let mixer = graph.addNode(MultiChannelMixerUnit(inputs: 2))
        try graph.connect(source, bus: 0, to: trim, input: 0)
        // Fan-out: the trimmed tone feeds two paths that merge again.
        try graph.connect(trim, bus: 0, to: left, input: 0)
        try graph.connect(trim, bus: 0, to: right, input: 0)
        try graph.connect(left, bus: 0, to: mixer, input: 0)
        try graph.connect(right, bus: 0, to: mixer, input: 1)
        try graph.connect(mixer, bus: 0, to: graph.addNode(io), input: 0)
        let script: (Int) throws -> Void = { cycle in
            guard ramps else { return }
            if cycle == 5 { try level.setParameter(GainUnit.Parameter.gain, to: -20, bufferOffset: 37) }
            if cycle == 9 { try level.rampParameter(GainUnit.Parameter.gain, to: 0, duration: 300, bufferOffset: 11) }
        }
        return Rig(graph: graph, script: script)
    }

    @Test func anIOHeadedGraphIsPlannedAndEqualsThePull() throws {
        for ramps in [false, true] {
            let facts = try expectPlanEqualsPull { try ioHeadedRig(ramps: ramps) }
            #expect(facts.refusal == nil, "\(facts.refusal ?? "")")
            // tone, trim, two gains, the mixer and the I/O unit: one step each.
            #expect(facts.steps == 6)
        }
    }
}
