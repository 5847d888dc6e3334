import SonoraCore
import SonoraDSP
import Testing
@testable import SonoraUnits

@Suite("Render plan touch-ahead covers the lean step's state and only the realtime side's")
struct RenderPlanTouchAheadTests {
    /// What a steady cycle touches ahead of a step (`RenderPlan.touchAhead`) — the lines from
    /// the unit's lean arrays to its core (`RealtimeResources.bytesBeforeCore`), and the core's
    /// first line — holds the input lists, owned input lists and ramps a lean render reads, and
    /// ends before `commandsSent`, which the control side writes while the realtime side renders.
    @Test(arguments: [1, 3, 8])
    func theLeanArraysLieBeforeTheCoreAndTheControlLineAfter(inputs: Int) throws {
        let unit: AudioUnit = inputs == 1 ? try gainUnit(-6) : MultiChannelMixerUnit(inputs: inputs)
        try unit.setMaximumFramesPerSlice(128)
        try unit.initialize()
        defer { unit.uninitialize() }
        let resources = try #require(unit.resources)
        let core = try #require(unit.core)
        let before = resources.bytesBeforeCore
        #expect(before % 64 == 0 && before > 0)
        let start = UnsafeRawPointer(core) - before
        #expect(Int(bitPattern: UnsafeRawPointer(core)) % 64 == 0, "the core starts a line")
        #expect(UnsafeRawPointer(core.pointee.commandsSent) - UnsafeRawPointer(core) >= 64, "the control side's line is not the core's first")
        func inside(_ pointer: UnsafeRawPointer, bytes: Int, _ what: String) {
            let offset = pointer - start
            #expect(offset >= 0 && offset + bytes <= before, "\(what) at \(offset)+\(bytes) outside the \(before) bytes before the core")
        }
        inside(core.pointee.inputLists, bytes: MemoryLayout<AudioBufferList>.stride * inputs, "input lists")
        inside(core.pointee.ownedInputLists, bytes: MemoryLayout<AudioBufferList>.stride * inputs, "owned input lists")
        inside(core.pointee.ramps, bytes: MemoryLayout<LinearRamp>.stride * core.pointee.slotCount, "ramps")
    }

    /// A steady cycle reads one line per step.
    @Test func aSteadyStepIsOneLine() {
        #expect(MemoryLayout<RenderPlan.SteadyStep>.stride <= 64)
    }
}
