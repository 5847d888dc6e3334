#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import SonoraHAL
import SonoraTestSupport
import SonoraUnits
import Synchronization
import Testing

/// The I/O unit's client-format conversion on a real ALSA PCM: Sonora's `sonoraloop`
/// plugin at 48 kHz (capture hears playback one buffer later), the client at 22,050 or
/// 44,100 Hz. Realtime: run this suite alone (`--no-parallel`).
@Suite("The I/O unit converts client formats on the sonoraloop ALSA plugin", .serialized,
       .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct IOUnitConversionALSATests {
    static let loopNumber = Atomic<Int>(0)

    /// One run: a `tone` sine played by a `clientRate` client with `clientChannels`, on a
    /// 48 kHz device with `deviceChannels`; returns the client capture and the xrun count.
    static func run(clientRate: Double, clientChannels: Int, deviceChannels: Int) throws -> (captured: [[Float]], xruns: Int, renderErrors: Int) {
        let name = "sonoraloop:ioconvert\(loopNumber.add(1, ordering: .relaxed).newValue)"
        let configuration = AudioDeviceConfiguration(
            sampleRate: 48000, periodFrames: 256, periods: 3, inputChannels: deviceChannels, outputChannels: deviceChannels,
            sampleFormat: .float32LE, requiresExactPeriod: true, realtimePriority: 60)
        let device = try ALSADevice(capture: name, playback: name, configuration: configuration)
        let io = IOUnit()
        try io.setDevice(device)
        try io.setIOEnabled(true, scope: .input, element: 1)
        try io.setStreamFormat(.canonical(sampleRate: clientRate, channels: clientChannels), scope: .input, element: 0)
        try io.setStreamFormat(.canonical(sampleRate: clientRate, channels: clientChannels), scope: .output, element: 1)
        try io.setRenderCallback(
            SineSource(frequency: IOUnitConversionTests.tone, sampleRate: clientRate, amplitudes: Array(repeating: 0.5, count: clientChannels)),
            input: 0)
        let seconds = 2.5
        let recorder = ClientRecorder(unit: io, channels: clientChannels, capacity: Int(clientRate * seconds) + 4096)
        try io.setInputCallback(recorder)
        try io.initialize()
        #expect(device.format.sampleRate == 48000)
        try io.start()
        let deadline = HostTime.now.seconds + 30
        while recorder.frames < Int(clientRate * seconds) && HostTime.now.seconds < deadline { usleep(20000) }
        io.stop()
        io.uninitialize()
        return (recorder.captured, device.statistics.xruns, device.statistics.renderErrors)
    }

    @Test("a sine from the client comes back at its frequency and level through ALSA",
          arguments: [(22050.0, 1, 2), (44100.0, 2, 2), (22050.0, 2, 1)])
    func toneThroughALSA(clientRate: Double, clientChannels: Int, deviceChannels: Int) throws {
        // A run with an xrun re-aligns the loop mid-stream (a glitch in the tone): on this
        // shared VM it happens now and then, so take the first run without one (up to 4).
        var result = try Self.run(clientRate: clientRate, clientChannels: clientChannels, deviceChannels: deviceChannels)
        var attempts = 1
        while result.xruns > 0 && attempts < 4 {
            result = try Self.run(clientRate: clientRate, clientChannels: clientChannels, deviceChannels: deviceChannels)
            attempts += 1
        }
        #expect(result.renderErrors == 0)
        guard result.xruns == 0 else {
            Issue.record("every run had an xrun (\(result.xruns) in the last); the tone was not measured")
            return
        }
        // Every client channel plays 0.5; a mono device carries their mean and feeds both back.
        for channel in 0..<clientChannels {
            #expect(result.captured[channel].count >= Int(clientRate * 2))
            IOUnitConversionTests.expectTone(result.captured[channel], rate: clientRate, amplitude: 0.5, "ALSA capture channel \(channel)")
        }
    }
}
