import SonoraCore
import SonoraDSP
import Testing
@testable import SonoraUnits

@Suite("Render plan touch-ahead covers the lean step's state and only the realtime side's")
struct RenderPlanTouchAheadTests {
    /// The bytes a steady cycle touches ahead of a step (`RenderPlan.touchAhead`) start at the
    /// core and hold what a lean render reads — the core, the input lists, the ramps — and end
    /// before `commandsSent`, which the control side writes while the realtime side renders.
    @Test(arguments: [1, 3, 8])
    func touchedBytesCoverTheLeanStateAndStopBeforeTheControlLine(inputs: Int) throws {
        let unit: AudioUnit = inputs == 1 ? try gainUnit(-6) : MultiChannelMixerUnit(inputs: inputs)
        try unit.setMaximumFramesPerSlice(128)
        try unit.initialize()
        defer { unit.uninitialize() }
        let resources = try #require(unit.resources)
        let core = try #require(unit.core)
        let start = UnsafeRawPointer(core)
        let touched = resources.realtimeHotByteCount
        #expect(touched >= MemoryLayout<RealtimeCore>.size)
        #expect(UnsafeRawPointer(core.pointee.commandsSent) - start >= touched, "the control side's line is not touched")
        func inside(_ pointer: UnsafeRawPointer, bytes: Int, _ what: String) {
            let offset = pointer - start
            #expect(offset >= 0 && offset + bytes <= touched, "\(what) at \(offset)+\(bytes) outside the \(touched) touched bytes")
        }
        inside(core.pointee.inputLists, bytes: MemoryLayout<AudioBufferList>.stride * inputs, "input lists")
        inside(core.pointee.ownedInputLists, bytes: MemoryLayout<AudioBufferList>.stride * inputs, "owned input lists")
        inside(core.pointee.ramps, bytes: MemoryLayout<LinearRamp>.stride * core.pointee.slotCount, "ramps")
    }
}
