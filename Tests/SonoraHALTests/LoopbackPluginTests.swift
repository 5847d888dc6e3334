#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import SonoraHAL
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
        let pattern = quantizedPattern(count: 2 * period + 37, bits: bits)
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
