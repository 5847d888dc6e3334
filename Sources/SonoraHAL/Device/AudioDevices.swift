import Logging
import SonoraCore

/// The one factory for devices: every caller (the I/O unit, pipelines, the CLI) opens
/// devices here, by specifier or by name, with the null-device fallback in one place.
public enum AudioDevices {
    /// What to do when a device cannot be opened.
    public enum Fallback: Hashable, Sendable {
        /// Throw the error.
        case none
        /// When an ALSA device cannot be opened, log a warning and run on the
        /// timer-paced null device instead (same rate, period and channels).
        case null
    }

    private static let logger = Logger(label: "sonora.devices")

    /// Opens `specifier`. Directions an ALSA specifier leaves out get no channels.
    public static func open(
        _ specifier: DeviceSpecifier, configuration: AudioDeviceConfiguration, alsaConfiguration: String = "",
        fallback: Fallback = .none, logger: Logger? = nil
    ) throws(AudioError) -> any AudioDevice {
        do {
            return try openExactly(specifier, configuration: configuration, alsaConfiguration: alsaConfiguration)
        } catch {
            // Only a device that may be absent falls back; a bad setting of Sonora's own
            // devices is an error either way.
            guard fallback == .null, case .alsa = specifier else { throw error }
            (logger ?? Self.logger).warning("\(error.message); running on the null device (fallback: null)")
            var settings = configuration
            if case .alsa(let capture, let playback) = specifier {
                if capture == nil { settings.inputChannels = 0 }
                if playback == nil { settings.outputChannels = 0 }
            }
            if settings.outputChannels == 0 { settings.outputChannels = max(1, settings.inputChannels) }
            return try TimerDevice(configuration: settings, mode: .null)
        }
    }

    /// Opens the device called `name` (see `DeviceSpecifier` for the names).
    public static func open(
        named name: String, configuration: AudioDeviceConfiguration, alsaConfiguration: String = "",
        fallback: Fallback = .none, logger: Logger? = nil
    ) throws(AudioError) -> any AudioDevice {
        try open(DeviceSpecifier(parsing: name), configuration: configuration, alsaConfiguration: alsaConfiguration, fallback: fallback, logger: logger)
    }

    private static func openExactly(
        _ specifier: DeviceSpecifier, configuration: AudioDeviceConfiguration, alsaConfiguration: String
    ) throws(AudioError) -> any AudioDevice {
        switch specifier {
        case .alsa(var capture, var playback):
            var configuration = configuration
            // A direction asked for with no channels is not opened (an output-only unit on a
            // duplex name such as `sonoraloop` or `default`): ALSA has no 0-channel PCM.
            if configuration.inputChannels == 0 && playback != nil && configuration.outputChannels > 0 { capture = nil }
            if configuration.outputChannels == 0 && capture != nil && configuration.inputChannels > 0 { playback = nil }
            if capture == nil { configuration.inputChannels = 0 }
            if playback == nil { configuration.outputChannels = 0 }
            return try ALSADevice(capture: capture, playback: playback, configuration: configuration, alsaConfiguration: alsaConfiguration)
        case .null:
            return try TimerDevice(configuration: configuration, mode: .null)
        case .offline:
            return try TimerDevice(configuration: configuration, mode: .offline)
        case .inProcess(let latency, let paced):
            let frames = latency ?? configuration.periodFrames * configuration.periods
            return try TimerDevice(configuration: configuration, mode: .inProcess(latencyFrames: frames, paced: paced))
        case .appliance(let path):
            return try ApplianceDevice(socketPath: path, configuration: configuration)
        case .netJack(let name):
            return try name.role == .slave ? NetJackSlaveDevice(name: name, configuration: configuration) : NetJackMasterDevice(name: name, configuration: configuration)
        case .jack(let name):
            return try JACKDevice(name: name, configuration: configuration)
        }
    }
}
