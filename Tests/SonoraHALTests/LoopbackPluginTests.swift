#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import Synchronization
import Testing

/// Sonora's own timer-paced ALSA loopback plugin (`sonoraloop`), a real ALSA PCM built by
/// the package: playback on loop X is heard by capture on loop X one buffer later.
@Suite("ALSA I/O on the sonoraloop plugin", .serialized, .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct LoopbackPluginTests {
    static let loopNumber = Atomic<Int>(0)

    /// Runs until a run has no xrun (at most `attempts` runs): wake-up latency on a shared
    /// VM can exceed a small buffer now and then, and an xrun legitimately re-aligns.
    static func runWithoutXruns(
        period: Int, periods: Int, format: DeviceSampleFormat = .float32LE, access: DeviceAccess? = nil, attempts: Int = 4
    ) throws -> (Probe, ALSADevice) {
        var result = try run(period: period, periods: periods, format: format, access: access)
        var attempt = 1
        while result.1.statistics.xruns > 0 && attempt < attempts {
            result = try run(period: period, periods: periods, format: format, access: access)
            attempt += 1
        }
        return result
    }

    /// Runs the pattern through a fresh loop and returns the probe and the device.
    static func run(
        period: Int, periods: Int, format: DeviceSampleFormat = .float32LE, access: DeviceAccess? = nil,
        channels: Int = 2, extraCycles: Int = 6, configure: ((Probe, ALSADevice) -> Void)? = nil,
        alsaConfiguration: String = ""
    ) throws -> (Probe, ALSADevice) {
        let name = "sonoraloop:test\(loopNumber.add(1, ordering: .relaxed).newValue)"
        let configuration = AudioDeviceConfiguration(
            periodFrames: period, periods: periods, inputChannels: channels, outputChannels: channels,
            sampleFormat: format, access: access, requiresExactPeriod: true, realtimePriority: 60)
        let device = try ALSADevice(capture: name, playback: name, configuration: configuration, alsaConfiguration: alsaConfiguration)
        let bits = format.sample == .int16 ? 16 : 24
        let pattern = TestSignal.quantized(count: 2 * period + 37, bits: bits)
        let patternStart = 2 * period + 5
        let cycles = (patternStart + pattern.count + period * periods) / period + extraCycles
        let probe = Probe(capacity: cycles * period + 4096, pattern: pattern, patternStart: patternStart)
        configure?(probe, device)
        try device.start(IOProcedure(probe))
        _ = probe.wait(cycles: cycles)
        device.stop()
        return (probe, device)
    }

    @Test("round trip is exactly periods × period, bit-exact", arguments: [64, 128, 256, 512, 1024], [2, 3])
    func exactRoundTrip(period: Int, periods: Int) throws {
        let (probe, device) = try Self.runWithoutXruns(period: period, periods: periods)
        #expect(device.format.roundTripFrames == period * periods)
        // Below 256 frames this VM's worst wake-ups can still cause an xrun in every
        // attempt: measured, not asserted (see ENGINEERING.md).
        guard device.statistics.xruns == 0 || period < 256 else {
            Issue.record("xruns in every attempt at period \(period) × \(periods)")
            return
        }
        if device.statistics.xruns == 0 {
            #expect(probe.measuredRoundTrip() == period * periods)
            #expect(probe.captureMatchesPattern(roundTrip: period * periods))
        }
    }

    @Test("every access type and sample format is exact and bit-exact", arguments: DeviceAccess.allCases, DeviceSampleFormat.allCases)
    func everyAccessAndFormat(access: DeviceAccess, format: DeviceSampleFormat) throws {
        let (probe, device) = try Self.runWithoutXruns(period: 256, periods: 2, format: format, access: access)
        #expect(device.format.playback?.access == access.rawValue)
        #expect(device.format.playback?.sampleFormat == format.rawValue)
        #expect(device.statistics.xruns == 0)
        #expect(probe.measuredRoundTrip() == 512)
        #expect(probe.captureMatchesPattern(roundTrip: 512))
    }
}

@Suite("ALSA I/O thread failures on the sonoraloop plugin", .serialized, .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct ALSAFailureTests {
    /// A pattern played well after `fromCycle`, to check alignment after a recovery.
    static func probe(period: Int, cycles: Int, patternAtCycle: Int) -> Probe {
        Probe(capacity: cycles * period + 4096, pattern: TestSignal.quantized(count: period + 11, bits: 24), patternStart: patternAtCycle * period + 3)
    }

    @Test("a render that stalls longer than the buffer is counted, timed, recovered, and the stream stays aligned")
    func stallRecovers() throws {
        let period = 256, periods = 2
        let device = try ALSADevice(
            capture: "sonoraloop:stall", playback: "sonoraloop:stall",
            configuration: AudioDeviceConfiguration(periodFrames: period, periods: periods, realtimePriority: 60))
        let probe = Self.probe(period: period, cycles: 90, patternAtCycle: 60)
        probe.stallCycle = 20
        probe.stallMicroseconds = 40_000  // 3.75 buffers of 10.7 ms
        // Recovery (drop, prepare, prefill, restart) allocates nothing either.
        probe.countFrom = 10
        probe.countUntil = 80
        try device.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 90))
        device.stop()
        let statistics = device.statistics
        #expect(statistics.xruns >= 1)
        #expect(statistics.xrunNanoseconds >= 20_000_000)
        if AllocationCounter.isAvailable { #expect(probe.allocations.load(ordering: .relaxed) == 0) }
        let events = device.takeEvents()
        #expect(events.contains { if case .xrun = $0 { true } else { false } })
        // After the restart the loop again delays by exactly one buffer — judged when the
        // stall was the only xrun (a second one, from a slow VM or ThreadSanitizer's
        // slowdown, restarts again while the pattern may be in flight).
        if statistics.xruns <= 2 {  // the stall underruns playback and overruns capture
            #expect(probe.measuredRoundTrip() == period * periods)
            #expect(probe.captureMatchesPattern(roundTrip: period * periods))
        }
        // Sample time moved on over the gap rather than back.
        let times = (0..<90).map { probe.sampleTimes[$0] }
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 > $0 })
    }

    @Test("a device that vanishes mid-run becomes an interruption and comes back")
    func vanishedDeviceComesBack() throws {
        let device = try ALSADevice(
            capture: "sonoraloop:vanish", playback: "sonoraloop:vanish",
            configuration: AudioDeviceConfiguration(periodFrames: 256, periods: 2, realtimePriority: 60))
        let probe = Self.probe(period: 256, cycles: 120, patternAtCycle: 80)
        // ENODEV after 30 cycles; the first two re-opens fail too.
        device.faults.inject(.availUpdate, errno: ENODEV, afterCalls: 30)
        device.faults.inject(.open, errno: ENODEV, afterCalls: 0, times: 2)
        try device.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 120))
        device.stop()
        let events = device.takeEvents()
        #expect(events.contains { if case .interruptionBegan(_, let code) = $0 { code == ENODEV } else { false } })
        #expect(events.contains { if case .interruptionEnded(let attempts) = $0 { attempts == 3 } else { false } })
        #expect(device.statistics.interruptions == 1)
        #expect(probe.measuredRoundTrip() == 512)
        #expect(probe.captureMatchesPattern(roundTrip: 512))
    }

    @Test("a suspended device (ESTRPIPE) is resumed and restarted")
    func suspendResumes() throws {
        let device = try ALSADevice(
            capture: "sonoraloop:suspend", playback: "sonoraloop:suspend",
            configuration: AudioDeviceConfiguration(periodFrames: 256, periods: 2, realtimePriority: 60))
        let probe = Self.probe(period: 256, cycles: 80, patternAtCycle: 50)
        device.faults.inject(.availUpdate, errno: ESTRPIPE, afterCalls: 20)
        try device.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 80))
        device.stop()
        #expect(device.takeEvents().contains { if case .resumed = $0 { true } else { false } })
        #expect(probe.measuredRoundTrip() == 512)
    }

    @Test("refused parameters are explained with the nearest value the device offers")
    func refusalsExplained() throws {
        let config = """
            pcm.fixed48 { type sonoraloop loop "fixed" rate 48000 format "S16_LE" channels 2 min_period_bytes 1024 }
            """
        func message(_ configuration: AudioDeviceConfiguration) -> String {
            do {
                _ = try ALSADevice(capture: nil, playback: "fixed48", configuration: configuration, alsaConfiguration: config)
                return "opened"
            } catch {
                return error.message
            }
        }
        #expect(message(AudioDeviceConfiguration(sampleRate: 44100, inputChannels: 0)) == "rate 44100 not available on playback PCM 'fixed48'; nearest 48000")
        #expect(message(AudioDeviceConfiguration(inputChannels: 0, outputChannels: 6)) == "6 channels not available on playback PCM 'fixed48'; it takes 2")
        #expect(message(AudioDeviceConfiguration(inputChannels: 0, sampleFormat: .float32LE)) == "format FLOAT_LE not available on playback PCM 'fixed48'; it offers S16_LE")
        #expect(message(AudioDeviceConfiguration(periodFrames: 100, inputChannels: 0, requiresExactPeriod: true)) == "period 100 not available on playback PCM 'fixed48'; nearest 256")
        // Without exactness the nearest is taken and said.
        let device = try ALSADevice(capture: nil, playback: "fixed48", configuration: AudioDeviceConfiguration(periodFrames: 100, inputChannels: 0), alsaConfiguration: config)
        #expect(device.format.periodFrames == 256)
        #expect(device.format.notes.contains("period 100 not available on playback PCM 'fixed48'; took nearest 256"))
    }

    @Test("the I/O thread makes no heap call on the plugin path", .enabled(if: AllocationCounter.isAvailable))
    func noAllocations() throws {
        let device = try ALSADevice(
            capture: "sonoraloop:alloc", playback: "sonoraloop:alloc",
            configuration: AudioDeviceConfiguration(periodFrames: 64, periods: 3, sampleFormat: .s24_3LE, access: .mmapInterleaved, realtimePriority: 60))
        let probe = Probe(capacity: 64)
        probe.countFrom = 50
        probe.countUntil = 550
        try device.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 551))
        device.stop()
        #expect(probe.allocations.load(ordering: .relaxed) == 0)
    }
}


@Suite("Two clocks on the sonoraloop plugin", .serialized, .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct DriftTests {
    @Test("capture on a clock 3000 ppm fast is resampled to playback's clock and the drift measured")
    func measuresDrift() throws {
        let config = #"pcm.skewed { type sonoraloop loop "skew-a" skew_ppm 3000 }"#
        // An xrun (a stall of the whole VM) restarts both streams and disturbs the loop;
        // judge a run without one (at most three tries).
        var drift = 0.0
        var statistics: DeviceStatistics?
        for _ in 0..<3 {
            let device = try ALSADevice(
                capture: "skewed", playback: "sonoraloop:skew-b",
                configuration: AudioDeviceConfiguration(periodFrames: 128, periods: 3, realtimePriority: 60, driftCorrection: .on), alsaConfiguration: config)
            #expect(device.correctsDrift)
            let probe = Probe(capacity: 1)
            try device.start(IOProcedure(probe))
            #expect(probe.wait(cycles: 2400))
            device.stop()
            drift = device.statistics.driftPPM
            statistics = device.statistics
            if device.statistics.xruns == 0 { break }
        }
        guard statistics?.xruns == 0 else {
            print("drift not judged: every run had an xrun on this loaded machine (\(String(describing: statistics)))")
            return
        }
        // The plugin's pointer moves in whole periods, so the drift shows only as whole
        // periods slip (3000 ppm slips 7 periods in the 6.4 s run) and the loop's integral
        // alternates by several hundred ppm; the reported drift is its ~1.5 s average
        // (measured 2907–2929 ppm here; the raw integral read 2536–3482).
        print("hal: sonoraloop skewed 3000 ppm, measured \(drift) ppm")
        #expect(abs(drift - 3000) < 300, "measured \(drift) ppm; \(String(describing: statistics))")
    }

    @Test("automatic drift correction stays off for plugin PCMs with no card")
    func automaticIsOffWithoutCards() throws {
        let same = try ALSADevice(capture: "sonoraloop:same", playback: "sonoraloop:same", configuration: AudioDeviceConfiguration())
        #expect(!same.correctsDrift)
        let two = try ALSADevice(capture: "sonoraloop:two-a", playback: "sonoraloop:two-b", configuration: AudioDeviceConfiguration())
        #expect(!two.correctsDrift)
    }
}
