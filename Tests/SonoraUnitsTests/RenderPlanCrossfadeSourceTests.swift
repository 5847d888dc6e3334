import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

/// A source that counts its renders and the cycles it was rendered more than once in: a
/// stateful source (an oscillator, a file reader, a ring) rendered twice in one cycle loses
/// or repeats what it plays.
private final class CountingSource: RenderCallbackTarget {
    var renders = 0
    var repeatedCycles = 0
    private var lastSampleTime = -1.0

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let time = request.pointee.timeStamp.sampleTime
        renders += 1
        if time == lastSampleTime { repeatedCycles += 1 }
        lastSampleTime = time
        for channel in 0..<request.pointee.buffers.channelCount {
            let samples = request.pointee.buffers.samples(channel)
            for frame in 0..<request.pointee.frameCount { samples[frame] = Float((time + Double(frame)).truncatingRemainder(dividingBy: 97)) / 97 }
        }
        return .noError
    }
}

@Suite("Live updates: a crossfade's old source renders once per cycle")
struct RenderPlanCrossfadeSourceTests {
    /// source → chain of `length` gains → output; a gain is inserted into the middle of the
    /// chain and taken out again, each by a live update, while cycles render. The crossfade
    /// of the input whose source changed pulls its old source in the cycle that applies the
    /// update: that pull must be served from what the cycle already rendered, not render the
    /// old source (and, recursively, everything upstream of it down to the source) again.
    @Test(arguments: [true, false])
    func insertingAndRemovingAGainRendersTheSourceOncePerCycle(plan: Bool) throws {
        let graph = AudioGraph()
        graph.rendersWithPlan = plan
        let source = CountingSource()
        let length = 12
        var chain: [AudioGraph.Node] = []
        for index in 0..<length {
            let gain = try gainUnit(-Float(index % 3))
            try gain.setMaximumFramesPerSlice(256)
            chain.append(graph.addNode(gain))
        }
        let output = GenericOutputUnit()
        try output.setMaximumFramesPerSlice(256)
        let head = graph.addNode(output)
        try graph.setRenderCallback(source, node: chain[0], input: 0)
        for (from, to) in zip(chain, chain.dropFirst()) { try graph.connect(from, bus: 0, to: to, input: 0) }
        try graph.connect(chain[length - 1], bus: 0, to: head, input: 0)
        try graph.initialize()
        #expect((graph.plan != nil) == plan)
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 128)
        var cycles = 0
        func cycle() {
            var flags = RenderActionFlags()
            let status = graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycles * 128)), frameCount: 128, into: buffers.list)
            #expect(status == .noError)
            cycles += 1
        }
        for _ in 0..<4 { cycle() }
        let before = chain[length / 2 - 1]
        let after = chain[length / 2]
        var inserted: AudioGraph.Node?
        for _ in 0..<6 {
            if let node = inserted {
                try graph.removeNode(node)
                try graph.connect(before, bus: 0, to: after, input: 0)
                inserted = nil
            } else {
                let gain = try gainUnit(-3)
                try gain.setMaximumFramesPerSlice(256)
                let node = graph.addNode(gain)
                try graph.connect(before, bus: 0, to: node, input: 0)
                try graph.connect(node, bus: 0, to: after, input: 0)
                inserted = node
            }
            try graph.update()
            for _ in 0..<3 { cycle() }
        }
        #expect(source.repeatedCycles == 0, "the source rendered twice in \(source.repeatedCycles) cycles")
        #expect(source.renders == cycles)
        #expect(buffers.list[0].contains { $0 != 0 })
        graph.uninitialize()
    }
}
