#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import Testing

/// A vanished device is re-opened off the realtime thread: the I/O thread only reports
/// the loss and waits, so it makes no heap call across the whole interruption.
@Suite("Recovery of a vanished ALSA device", .serialized, .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct DeviceRecoveryTests {
    @Test("re-opening a vanished device makes no heap call on the I/O thread", .enabled(if: AllocationCounter.isAvailable))
    func reopenAllocatesNothingOnTheIOThread() throws {
        let device = try ALSADevice(
            capture: "sonoraloop:reopen-alloc", playback: "sonoraloop:reopen-alloc",
            configuration: AudioDeviceConfiguration(periodFrames: 256, periods: 2, realtimePriority: 60))
        let probe = Probe(capacity: 256)
        // ENODEV after ~30 cycles (3–4 avail_update calls each); the first two re-opens
        // fail too. Counted from before the loss until well after the device is back.
        device.faults.inject(.availUpdate, errno: ENODEV, afterCalls: 120)
        device.faults.inject(.open, errno: ENODEV, afterCalls: 0, times: 2)
        probe.countFrom = 5
        probe.countUntil = 90
        try device.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 91))
        device.stop()
        let events = device.takeEvents()
        #expect(events.contains { if case .interruptionEnded(let attempts) = $0 { attempts == 3 } else { false } })
        #expect(probe.allocations.load(ordering: .relaxed) == 0)
    }

    @Test("a suspend and resume makes no heap call on the I/O thread", .enabled(if: AllocationCounter.isAvailable))
    func resumeAllocatesNothingOnTheIOThread() throws {
        let device = try ALSADevice(
            capture: "sonoraloop:resume-alloc", playback: "sonoraloop:resume-alloc",
            configuration: AudioDeviceConfiguration(periodFrames: 256, periods: 2, realtimePriority: 60))
        let probe = Probe(capacity: 256)
        device.faults.inject(.availUpdate, errno: ESTRPIPE, afterCalls: 120)
        probe.countFrom = 5
        probe.countUntil = 70
        try device.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 71))
        device.stop()
        #expect(device.takeEvents().contains { if case .resumed = $0 { true } else { false } })
        #expect(probe.allocations.load(ordering: .relaxed) == 0)
    }

    @Test("a device stopped during an interruption starts again")
    func stopDuringInterruption() throws {
        let device = try ALSADevice(
            capture: "sonoraloop:stop-lost", playback: "sonoraloop:stop-lost",
            configuration: AudioDeviceConfiguration(periodFrames: 256, periods: 2, realtimePriority: 60))
        let probe = Probe(capacity: 256)
        device.faults.inject(.availUpdate, errno: ENODEV, afterCalls: 40)
        device.faults.inject(.open, errno: ENODEV, afterCalls: 0, times: 1000)
        try device.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 5))
        // Wait for the interruption, then stop while the re-opens keep failing.
        var began = false
        for _ in 0..<200 where !began {
            usleep(10_000)
            began = device.statistics.interruptions > 0
        }
        #expect(began)
        device.stop()
        device.faults.clear()
        let again = Probe(capacity: 256)
        try device.start(IOProcedure(again))
        #expect(again.wait(cycles: 20))
        device.stop()
    }
}
