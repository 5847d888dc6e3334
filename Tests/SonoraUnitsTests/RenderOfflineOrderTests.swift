import SonoraCore
import Testing
@testable import SonoraUnits

@Suite("renderOffline takes its arguments in one order")
struct RenderOfflineOrderTests {
    @Test func graphAndGenericOutputTakeFrameCountSliceFramesStartSampleTime() throws {
        func chain() throws -> (AudioGraph, GenericOutputUnit) {
            let graph = AudioGraph()
            let tone = graph.addNode(ToneGeneratorUnit())
            let outputUnit = GenericOutputUnit()
            let output = graph.addNode(outputUnit)
            try graph.connect(tone, bus: 0, to: output, input: 0)
            try graph.initialize()
            return (graph, outputUnit)
        }
        let (graph, _) = try chain()
        let (_, unit) = try chain()
        let viaGraph = try graph.renderOffline(frameCount: 300, sliceFrames: 100, startSampleTime: 4800)
        let viaUnit = try unit.renderOffline(frameCount: 300, sliceFrames: 100, startSampleTime: 4800)
        #expect(viaGraph == viaUnit)
        #expect(viaGraph[0].contains { $0 != 0 })
    }
}
