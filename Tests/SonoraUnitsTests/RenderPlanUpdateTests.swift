import Foundation
import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

/// A source whose samples depend only on the sample time (no state): two graphs rendering
/// the same time get the same samples, however they got there.
private final class TimeSource: RenderCallbackTarget {
    let step: Double
    init(_ step: Double) { self.step = step }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let start = request.pointee.timeStamp.sampleTime
        for channel in 0..<request.pointee.buffers.channelCount {
            let samples = request.pointee.buffers.samples(channel)
            for frame in 0..<request.pointee.frameCount {
                samples[frame] = Float(sin((start + Double(frame)) * step + Double(channel)))
            }
        }
        return .noError
    }
}

/// The graph's shape as a list of edits, so the same final shape can be reached by live
/// updates on one graph and built at once on another.
private struct Shape {
    /// Gains along the chain feeding the mixer's input 0 (dB).
    var chain: [Float]
    /// Gains on the branch from the chain's first gain (fan-out) into the mixer's input 1.
    var branch: [Float]
    /// The step of the time source feeding the chain.
    var sourceStep: Double
}

/// Builds `shape` on `graph`: time source → chain (fan-out at its first gain) → mixer input 0,
/// the branch → mixer input 1, a second time source → mixer input 2, mixer → gain → output.
/// Returns the nodes added.
@discardableResult
private func build(_ shape: Shape, on graph: AudioGraph) throws -> [AudioGraph.Node] {
    var added: [AudioGraph.Node] = []
    func add(_ unit: AudioUnit) throws -> AudioGraph.Node {
        try unit.setMaximumFramesPerSlice(256)
        let node = graph.addNode(unit)
        added.append(node)
        return node
    }
    let chain = try shape.chain.map { try add(try gainUnit($0)) }
    let branch = try shape.branch.map { try add(try gainUnit($0)) }
    let mixer = try add(MultiChannelMixerUnit(inputs: 3))
    let post = try add(try gainUnit(-1))
    let output = try add(GenericOutputUnit())
    try graph.setRenderCallback(TimeSource(shape.sourceStep), node: chain[0], input: 0)
    for (from, to) in zip(chain, chain.dropFirst()) { try graph.connect(from, bus: 0, to: to, input: 0) }
    try graph.connect(chain.last!, bus: 0, to: mixer, input: 0)
    var previous = chain[0]
    for node in branch {
        try graph.connect(previous, bus: 0, to: node, input: 0)
        previous = node
    }
    try graph.connect(previous, bus: 0, to: mixer, input: 1)
    try graph.setRenderCallback(TimeSource(0.013), node: mixer, input: 2)
    try graph.connect(mixer, bus: 0, to: post, input: 0)
    try graph.connect(post, bus: 0, to: output, input: 0)
    return added
}

private func render(_ graph: AudioGraph, from cycle: Int, cycles: Int, frames: Int = 128) throws -> [[Float]] {
    let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
    var output: [[Float]] = [[], []]
    for index in cycle..<cycle + cycles {
        var flags = RenderActionFlags()
        let status = graph.render(
            flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * frames)), frameCount: frames, into: buffers.list)
        #expect(status == .noError, "cycle \(index)")
        for channel in 0..<2 { output[channel] += buffers.list[channel] }
    }
    return output
}

/// A plan as far as it does not depend on node numbers.
private func layout(_ plan: RenderPlan?) -> String {
    guard let plan else { return "no plan" }
    let uses = plan.bufferUse.map { "\($0.writes)<-\($0.reads.map { "\($0.step):\($0.buffer)" })" }
    return "steps \(plan.stepCount) buffers \(plan.bufferCount) in place \(plan.inPlaceSteps) \(uses)"
}

@Suite("Render plan compiled at update", .serialized)
struct RenderPlanUpdateTests {
    /// A graph edited by live updates (a gain inserted into the chain, one removed, the branch
    /// lengthened, the chain's source replaced), rendered past each update's crossfade, plans
    /// and renders exactly as a graph built in its final shape and initialized: the update's
    /// compile and bookkeeping (only the inputs changed since the last update are looked at)
    /// reach the same picture as the full compile at `initialize()`.
    @Test func anUpdatedGraphPlansAndRendersAsOneBuiltInItsFinalShape() throws {
        var shape = Shape(chain: [-1, -2, -3, -4], branch: [2], sourceStep: 0.021)
        let live = AudioGraph()
        var nodes = try build(shape, on: live)
        try live.initialize()
        var cycle = 0
        _ = try render(live, from: cycle, cycles: 4)
        cycle += 4
        // nodes: chain[0…3], branch[0], mixer, post gain, output.
        func liveUpdate(_ edit: () throws -> Void) throws {
            try edit()
            try live.update()
            _ = try render(live, from: cycle, cycles: 4)  // past the 64-frame crossfade
            cycle += 4
        }
        // Insert a -6 dB gain between chain[1] and chain[2].
        try liveUpdate {
            let gain = try gainUnit(-6)
            try gain.setMaximumFramesPerSlice(256)
            let node = live.addNode(gain)
            try live.connect(nodes[1], bus: 0, to: node, input: 0)
            try live.connect(node, bus: 0, to: nodes[2], input: 0)
            nodes.insert(node, at: 2)
        }
        shape.chain.insert(-6, at: 2)
        // Remove chain[3] (the old chain[2], -3 dB).
        try liveUpdate {
            try live.removeNode(nodes[3])
            try live.connect(nodes[2], bus: 0, to: nodes[4], input: 0)
            nodes.remove(at: 3)
        }
        shape.chain.remove(at: 3)
        // Lengthen the branch by a +1 dB gain before the mixer.
        try liveUpdate {
            let gain = try gainUnit(1)
            try gain.setMaximumFramesPerSlice(256)
            let node = live.addNode(gain)
            try live.connect(nodes[4], bus: 0, to: node, input: 0)  // after branch[0]
            try live.connect(node, bus: 0, to: nodes[5], input: 1)  // into the mixer
        }
        shape.branch.append(1)
        // Disconnect and reconnect an edge (no change), and replace the chain's source.
        try liveUpdate {
            try live.disconnect(nodes[1], input: 0)
            try live.connect(nodes[0], bus: 0, to: nodes[1], input: 0)
            try live.setRenderCallback(TimeSource(0.034), node: nodes[0], input: 0)
        }
        shape.sourceStep = 0.034

        let fresh = AudioGraph()
        try build(shape, on: fresh)
        try fresh.initialize()
        #expect(layout(live.plan) == layout(fresh.plan))
        #expect(live.plan?.stepCount == shape.chain.count + shape.branch.count + 3)
        let liveOutput = try render(live, from: cycle, cycles: 12)
        let freshOutput = try render(fresh, from: cycle, cycles: 12)
        expectSameSamples(liveOutput, freshOutput)
        live.uninitialize()
        fresh.uninitialize()
    }

    /// The same edits with the plan off: the update's bookkeeping (inputs set since the last
    /// update) gives the recursive pull the same sources as a full rebuild would.
    @Test func theUpdatedPullMatchesTheUpdatedPlan() throws {
        func run(plan: Bool) throws -> [[Float]] {
            let graph = AudioGraph()
            graph.rendersWithPlan = plan
            let nodes = try build(Shape(chain: [-1, -2, -3], branch: [2, -2], sourceStep: 0.02), on: graph)
            try graph.initialize()
            var output = try render(graph, from: 0, cycles: 3)
            let gain = try gainUnit(-9)
            try gain.setMaximumFramesPerSlice(256)
            let inserted = graph.addNode(gain)
            try graph.connect(nodes[0], bus: 0, to: inserted, input: 0)
            try graph.connect(inserted, bus: 0, to: nodes[1], input: 0)
            let unused = graph.addNode(try gainUnit(3))  // added and removed before the update: never live
            try graph.removeNode(unused)
            try graph.update()
            for (index, part) in try render(graph, from: 3, cycles: 6).enumerated() { output[index] += part }
            try graph.removeNode(nodes[4])  // the branch's second gain
            try graph.connect(nodes[3], bus: 0, to: nodes[5], input: 1)
            try graph.update()
            for (index, part) in try render(graph, from: 9, cycles: 6).enumerated() { output[index] += part }
            graph.uninitialize()
            return output
        }
        expectSameSamples(try run(plan: true), try run(plan: false))
    }
}

@Suite("Render plan update on the realtime thread", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct RenderPlanUpdateAllocationTests {
    /// Cycles that apply an update's batch (new plan, input changes with their crossfades,
    /// fan-out caches switched) make no heap call; the compile and the retirement of the old
    /// plan are on the control side.
    @Test func applyingUpdatesMakesNoHeapCalls() throws {
        let graph = AudioGraph()
        let nodes = try build(Shape(chain: [-1, -2, -3, -4, -5], branch: [1], sourceStep: 0.02), on: graph)
        try graph.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 128)
        let list = buffers.list
        func cycle(_ index: Int) -> AudioError.Code {
            var flags = RenderActionFlags()
            return graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 128)), frameCount: 128, into: list)
        }
        for index in 0..<20 { #expect(cycle(index) == .noError) }
        var heapCalls = 0
        var failures = 0
        var inserted: AudioGraph.Node?
        var updates = 0
        for index in 20..<420 {
            if index % 10 == 0 {
                if let node = inserted {
                    try graph.removeNode(node)
                    try graph.connect(nodes[1], bus: 0, to: nodes[2], input: 0)
                    inserted = nil
                } else {
                    let node = graph.addNode(try gainUnit(-6))
                    try graph.connect(nodes[1], bus: 0, to: node, input: 0)
                    try graph.connect(node, bus: 0, to: nodes[2], input: 0)
                    // A second reader of chain[1] while it is in: the fan-out cache turns on and off.
                    try graph.connect(nodes[1], bus: 0, to: nodes[6], input: 2)
                    inserted = node
                }
                if inserted == nil { try graph.setRenderCallback(TimeSource(0.013), node: nodes[6], input: 2) }
                try graph.update()
                updates += 1
            }
            AllocationCounter.begin()
            if cycle(index) != .noError { failures += 1 }
            heapCalls += AllocationCounter.end()
        }
        #expect(graph.appliedUpdates == updates)
        #expect(failures == 0)
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 400 cycles applying \(updates) updates")
        #expect(list[0].contains { $0 != 0 })
        graph.uninitialize()
    }
}
