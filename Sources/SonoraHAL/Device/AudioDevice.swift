import SonoraCore

/// A running source and sink of periods: an ALSA PCM pair, the timer-paced null device,
/// the offline device, or the in-process loopback. Each runs one I/O thread (the offline
/// device can also be driven by its caller) that calls an `IOProcedure` once per period.
public protocol AudioDevice: AnyObject, Sendable {
    /// The driver: "alsa", "null", "offline" or "loopback".
    var driver: String { get }
    /// What the device granted.
    var format: DeviceFormat { get }
    var isRunning: Bool { get }
    /// Starts the I/O thread; `procedure` is called once per period until `stop()`.
    func start(_ procedure: IOProcedure) throws(AudioError)
    /// Stops the I/O thread and waits for it; the device can be started again.
    func stop()
    var statistics: DeviceStatistics { get }
    /// Events the I/O thread posted since the last call (xruns, interruptions …).
    func takeEvents() -> [DeviceEvent]
    /// Clears the load and jitter figures (e.g. after warm-up).
    func resetLoad()
}

/// Which device to open, by driver.
public enum DeviceSpecifier: Hashable, Sendable {
    /// ALSA PCMs by name (`hw:0`, `plughw:1,0`, `default`, `sonoraloop:NAME`, …); nil
    /// for a direction the device does not use.
    case alsa(capture: String?, playback: String?)
    /// Timer-paced on CLOCK_MONOTONIC; captures silence, discards playback.
    case null
    /// As fast as the procedure runs; captures silence, discards playback.
    case offline
    /// In process: capture hears playback exactly `latencyFrames` later; paced by the
    /// timer like `null`, or unpaced.
    case loopback(latencyFrames: Int, paced: Bool)

    /// Parses the names the CLI and configs use: `null`, `offline`, `loopback[:FRAMES]`,
    /// or an ALSA PCM name (for both directions).
    public init(parsing text: String) {
        switch text {
        case "null": self = .null
        case "offline": self = .offline
        default:
            if text == "inprocess" || text.hasPrefix("inprocess:") {
                let frames = Int(text.split(separator: ":").dropFirst().first ?? "") ?? 0
                self = .loopback(latencyFrames: frames, paced: true)
            } else {
                self = .alsa(capture: text, playback: text)
            }
        }
    }
}

/// Opens devices by specifier.
public enum AudioDevices {
    public static func open(
        _ specifier: DeviceSpecifier, configuration: AudioDeviceConfiguration, alsaConfiguration: String = ""
    ) throws(AudioError) -> any AudioDevice {
        switch specifier {
        case .alsa(let capture, let playback):
            var configuration = configuration
            if capture == nil { configuration.inputChannels = 0 }
            if playback == nil { configuration.outputChannels = 0 }
            return try ALSADevice(capture: capture, playback: playback, configuration: configuration, alsaConfiguration: alsaConfiguration)
        case .null:
            return try TimerDevice(configuration: configuration, mode: .null)
        case .offline:
            return try TimerDevice(configuration: configuration, mode: .offline)
        case .loopback(let latency, let paced):
            return try TimerDevice(configuration: configuration, mode: .loopback(latencyFrames: latency, paced: paced))
        }
    }
}
