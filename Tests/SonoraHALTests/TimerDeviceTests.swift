#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import Testing

@Suite("Timer-paced, offline and in-process loopback devices", .serialized)
struct TimerDeviceTests {
    @Test("offline device runs cycles on the caller's thread with continuous sample time")
    func offlineCycles() throws {
        let device = try TimerDevice(configuration: AudioDeviceConfiguration(periodFrames: 128, inputChannels: 1, outputChannels: 2), mode: .offline)
        let probe = Probe(capacity: 128 * 20)
        try device.run(cycles: 20, IOProcedure(probe))
        #expect(probe.cycles.load(ordering: .relaxed) == 20)
        #expect((0..<20).allSatisfy { probe.sampleTimes[$0] == Double($0 * 128) })
        #expect((0..<probe.framesCaptured).allSatisfy { probe.captured[$0] == 0 })
        #expect(device.statistics.cycles == 20)
        #expect(device.statistics.sampleTime == 20 * 128)
    }

    @Test("in-process loopback hears playback exactly latency frames later", arguments: [64, 100, 256, 1000, 2048])
    func inProcessRoundTrip(latency: Int) throws {
        let pattern = TestSignal.quantized(count: 300, bits: 24)
        let device = try TimerDevice(
            configuration: AudioDeviceConfiguration(periodFrames: 64, inputChannels: 1, outputChannels: 1),
            mode: .inProcess(latencyFrames: latency, paced: false))
        let probe = Probe(capacity: 64 * 100, pattern: pattern, patternStart: 70)
        try device.run(cycles: 100, IOProcedure(probe))
        #expect(probe.measuredRoundTrip() == latency)
        #expect(probe.captureMatchesPattern(roundTrip: latency))
    }

    @Test("in-process loopback refuses a latency shorter than one period")
    func inProcessRefusesShortLatency() {
        #expect(throws: AudioError.self) {
            try TimerDevice(configuration: AudioDeviceConfiguration(periodFrames: 256), mode: .inProcess(latencyFrames: 100, paced: false))
        }
    }

    @Test("null device is paced by the clock and keeps sample time continuous")
    func nullDevicePaced() throws {
        let device = try TimerDevice(configuration: AudioDeviceConfiguration(periodFrames: 256, inputChannels: 0, outputChannels: 2, realtimePriority: 50), mode: .null)
        let probe = Probe(capacity: 1)
        try device.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 20))
        device.stop()
        let start = HostTime.now
        let count = probe.cycles.load(ordering: .relaxed)
        #expect(count >= 20)
        #expect((0..<count).allSatisfy { probe.sampleTimes[$0] == Double($0 * 256) })
        // Stopped means stopped: no cycle after stop() returned.
        usleep(20_000)
        #expect(probe.cycles.load(ordering: .relaxed) == count)
        _ = start
        #expect(device.statistics.rateScalar > 0.5 && device.statistics.rateScalar < 2)
    }

    @Test("configurations with impossible numbers are refused with every problem named")
    func configurationValidation() {
        let bad = AudioDeviceConfiguration(sampleRate: 10, periodFrames: 3, periods: 1, inputChannels: 0, outputChannels: 0)
        #expect {
            try bad.validate()
        } throws: { error in
            let message = (error as? AudioError)?.message ?? ""
            return message.contains("sample rate 10") && message.contains("period 3") && message.contains("1 periods") && message.contains("neither input nor output")
        }
    }
}
