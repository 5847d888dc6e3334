#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import Testing

/// ALSA's own `null` PCM: accepts every format and mmap but is not paced — good for
/// negotiation, the state machine and allocation counting, not for timing.
@Suite("ALSA devices on the null PCM", .serialized)
struct ALSANullTests {
    @Test("negotiation prefers mmap non-interleaved float and reports what was granted")
    func negotiationDefaults() throws {
        let device = try ALSADevice(capture: "null", playback: "null", configuration: AudioDeviceConfiguration(periodFrames: 256, periods: 3))
        let format = device.format
        #expect(format.playback?.access == "mmap-noninterleaved")
        #expect(format.playback?.sampleFormat == "FLOAT_LE")
        #expect(format.periodFrames == 256)
        #expect(format.periods == 3)
        #expect(format.roundTripFrames == 768)
        #expect(format.capture?.channels == 2)
    }

    @Test("an asked-for access and format are used", arguments: DeviceAccess.allCases)
    func askedAccess(access: DeviceAccess) throws {
        let configuration = AudioDeviceConfiguration(periodFrames: 128, inputChannels: 0, sampleFormat: .s24_3BE, access: access)
        let device = try ALSADevice(capture: nil, playback: "null", configuration: configuration)
        #expect(device.format.playback?.access == access.rawValue)
        #expect(device.format.playback?.sampleFormat == "S24_3BE")
        let probe = Probe(capacity: 1, pattern: [0.5, -0.25])
        try device.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 50))
        device.stop()
        #expect(device.statistics.xruns == 0)
    }

    @Test("a PCM that does not exist is refused naming it")
    func missingPCM() {
        #expect {
            try ALSADevice(capture: nil, playback: "sonora_no_such_pcm", configuration: AudioDeviceConfiguration(inputChannels: 0))
        } throws: { error in
            let error = error as? AudioError
            return error?.code == .badDevice && error?.message.contains("'sonora_no_such_pcm'") == true
        }
    }

    @Test("the I/O thread makes no heap call over 10,000 cycles", .enabled(if: AllocationCounter.isAvailable))
    func noAllocations() throws {
        let device = try ALSADevice(capture: "null", playback: "null", configuration: AudioDeviceConfiguration(periodFrames: 64, sampleFormat: .s16LE, access: .mmapInterleaved))
        let probe = Probe(capacity: 64)
        probe.countFrom = 100
        probe.countUntil = 10_100
        try device.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 10_101, seconds: 120))
        device.stop()
        #expect(probe.allocations.load(ordering: .relaxed) == 0)
    }
}
