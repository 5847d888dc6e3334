import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import Testing

@Suite struct ScriptedDeviceTests {
    @Test("the test drives the cycles: none before start or after stop; the in-process device hears playback")
    func drivenCycles() throws {
        let device = try ScriptedDevice(
            configuration: AudioDeviceConfiguration(periodFrames: 64, inputChannels: 1, outputChannels: 1, realtimePriority: nil),
            inProcessLatency: 128)
        let probe = Probe(capacity: 64 * 20, pattern: TestSignal.quantized(count: 100, bits: 24), patternStart: 10)
        try device.run(cycles: 2)
        #expect(probe.cycles.load(ordering: .relaxed) == 0)
        try device.start(IOProcedure(probe))
        #expect(device.isRunning)
        try device.run(cycles: 10)
        #expect(probe.cycles.load(ordering: .relaxed) == 10)
        #expect(probe.measuredRoundTrip() == 128)
        #expect(probe.captureMatchesPattern(roundTrip: 128))
        device.stop()
        try device.run(cycles: 3)
        #expect(probe.cycles.load(ordering: .relaxed) == 10)
    }

    @Test("counts the procedure's heap calls", .enabled(if: AllocationCounter.isAvailable))
    func countsAllocations() throws {
        let device = try ScriptedDevice(configuration: AudioDeviceConfiguration(periodFrames: 64, inputChannels: 1, outputChannels: 1, realtimePriority: nil))
        let probe = Probe(capacity: 64 * 20)
        try device.start(IOProcedure(probe))
        try device.run(cycles: 2)
        device.countsAllocations = true
        try device.run(cycles: 10)
        #expect(device.allocations == 0)
    }
}
