import SonoraCore
import SonoraUnits
import Testing

/// A unit removed by a live update is still pulled while the crossfade away from it
/// plays; it must stay alive until then, even when a later update lands in the same
/// cycle (the render side applies every batch queued so far at once — what a
/// preempted I/O thread does on a loaded machine).
@Suite("AudioGraph retires removed units only after their crossfade")
struct GraphRetirementTests {
    @Test("two batches applied in one cycle: the unit the first removed lives until its fade is over, and the output never steps")
    func removedUnitOutlivesItsFade() throws {
        let graph = AudioGraph()
        let source = ConstantSource(0.5)
        let input = graph.addNode(GainUnit(), name: "input")
        let output = graph.addNode(GenericOutputUnit(), name: "out")
        try graph.setRenderCallback(source, node: input, input: 0)
        var gainUnit: GainUnit? = GainUnit()
        weak let removed = gainUnit
        try gainUnit!.setParameter(GainUnit.Parameter.gain, to: -6.0206)
        let gain = graph.addNode(gainUnit!, name: "gain")
        gainUnit = nil
        try graph.connect(input, bus: 0, to: gain, input: 0)
        try graph.connect(gain, bus: 0, to: output, input: 0)
        try graph.initialize()

        // 16-frame cycles: the 64-frame crossfade spans four of them.
        let frames = 16
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        var rendered: [Float] = []
        var sampleTime = 0.0
        func renderCycle() {
            var flags = RenderActionFlags()
            let status = graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: sampleTime), frameCount: frames, into: buffers.list)
            #expect(status == .noError)
            rendered += Array(UnsafeBufferPointer(start: buffers.list.samples(0), count: frames))
            sampleTime += Double(frames)
        }
        for _ in 0..<8 { renderCycle() }

        // Batch 1 removes the gain (the output fades from it to the input); batch 2, queued
        // before the render side ran, changes something else. Both land in the next cycle.
        try graph.removeNode(gain)
        try graph.connect(input, bus: 0, to: output, input: 0)
        try graph.update()
        let spare = graph.addNode(GainUnit(), name: "spare")
        try graph.update()
        renderCycle()
        // A third update lets the control side retire what the render side is done with.
        try graph.removeNode(spare)
        try graph.update()
        #expect(removed != nil, "the removed gain was freed while its crossfade still pulls it")
        for _ in 0..<8 { renderCycle() }

        var largestStep: Float = 0
        for index in 1..<rendered.count { largestStep = max(largestStep, abs(rendered[index] - rendered[index - 1])) }
        #expect(largestStep <= 0.25 / 64 + 1e-5, "largest step \(largestStep)")
        #expect(rendered.last == 0.5)
        graph.uninitialize()
    }
}
