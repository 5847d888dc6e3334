import Logging
import SonoraCore
import SonoraHAL

/// Opens the device a config names: ALSA PCMs, or Sonora's null device; falls back to
/// the null device when the ALSA device cannot be opened and `fallback: null` says so.
public enum DeviceOpener {
    public static func open(_ configuration: PipelineConfiguration, logger: Logger) throws(AudioError) -> any AudioDevice {
        let engine = configuration.engine
        let device = configuration.device
        var settings = AudioDeviceConfiguration(
            sampleRate: engine.sampleRate, periodFrames: engine.periodFrames, periods: engine.periods,
            inputChannels: device.capture == nil ? 0 : engine.channels, outputChannels: device.playback == nil ? 0 : engine.channels,
            realtimePriority: device.priority, locksMemory: true)
        let capture = device.capture == "null" ? nil : device.capture
        let playback = device.playback == "null" ? nil : device.playback
        if capture == nil && playback == nil {
            if device.playback == nil && device.capture == nil { settings.outputChannels = engine.channels }
            return try TimerDevice(configuration: settings, mode: .null)
        }
        do {
            return try ALSADevice(capture: capture, playback: playback, configuration: settings)
        } catch {
            guard device.fallbackToNull else { throw error }
            logger.warning("\(error.message); running on the null device (fallback: null)")
            if settings.outputChannels == 0 { settings.outputChannels = engine.channels }
            return try TimerDevice(configuration: settings, mode: .null)
        }
    }
}
