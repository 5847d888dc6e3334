import Logging
import SonoraCore
import SonoraHAL

/// Opens the device a config names, through the HAL's one parser and factory
/// (`DeviceSpecifier`, `AudioDevices`), with the null fallback when `fallback: null`.
public enum DeviceOpener {
    public static func open(_ configuration: PipelineConfiguration, logger: Logger) throws(AudioError) -> any AudioDevice {
        let engine = configuration.engine
        let device = configuration.device
        let specifier = try DeviceSpecifier(capture: device.capture, playback: device.playback)
        var settings = AudioDeviceConfiguration(
            sampleRate: engine.sampleRate, periodFrames: engine.periodFrames, periods: engine.periods,
            inputChannels: device.capture == nil ? 0 : engine.channels, outputChannels: device.playback == nil ? 0 : engine.channels,
            realtimePriority: device.priority, locksMemory: true)
        if device.wakesOnTimer {
            settings.wakeUp = .timer(headroomMicroseconds: device.headroomMicroseconds ?? AudioDeviceConfiguration.WakeUp.defaultHeadroomMicroseconds)
        }
        // No device section at all still plays (into the null device).
        if device.playback == nil && device.capture == nil { settings.outputChannels = engine.channels }
        return try AudioDevices.open(specifier, configuration: settings, fallback: device.fallbackToNull ? .null : .none, logger: logger)
    }
}
