import Foundation
import SonoraCore
import SonoraHAL
import SonoraUnits

/// Properties: preferred values the program sets, current values the devices granted.
///
/// "Current" values come from the devices the session's participants use (a queue's shared
/// output, an input queue's unit, a unit given with `use(_:)`): the first one that plays,
/// else the first that captures. Without any, the rate and duration are what devices open
/// at by default (48 kHz, 256-frame periods): a preference is not a grant. Preferred values
/// apply to devices opened after they are set (a shared output is opened with the first
/// queue naming its device: `AudioQueue.setCurrentDevice`), as the hardware renegotiates
/// on iPhone OS; the current values then say what was granted, with their listeners.
extension AudioSession {
    /// The sample rate the program would like devices to open at (nil: the queue's own).
    public var preferredSampleRate: Double? { lock.withLock { preferredRate } }

    /// Sets the preferred hardware sample rate (nil: none). Refused outside 1 000…768 000 Hz.
    public func setPreferredSampleRate(_ rate: Double?) throws(AudioError) {
        if let rate, !(1000...768_000).contains(rate) {
            throw AudioError(.parameterError, "AudioSession.setPreferredSampleRate: \(rate) Hz is out of 1000…768000")
        }
        lock.withLock { preferredRate = rate }
        delivery.async { self.refreshProperties() }
    }

    /// The I/O buffer duration (seconds per period) the program would like (nil: the device's default).
    public var preferredIOBufferDuration: TimeInterval? { lock.withLock { preferredDuration } }

    /// Sets the preferred I/O buffer duration (nil: none). Refused outside 0.1 ms…1 s.
    public func setPreferredIOBufferDuration(_ duration: TimeInterval?) throws(AudioError) {
        if let duration, !(0.0001...1).contains(duration) {
            throw AudioError(.parameterError, "AudioSession.setPreferredIOBufferDuration: \(duration) s is out of 0.0001…1")
        }
        lock.withLock { preferredDuration = duration }
        delivery.async { self.refreshProperties() }
    }

    /// The hardware sample rate now (kAudioSessionProperty_CurrentHardwareSampleRate).
    public var sampleRate: Double { snapshot().sampleRate }
    /// The I/O buffer duration granted (kAudioSessionProperty_CurrentHardwareIOBufferDuration).
    public var ioBufferDuration: TimeInterval { snapshot().ioBufferDuration }
    /// Capture channels of the devices in use (…CurrentHardwareInputNumberChannels).
    public var inputNumberOfChannels: Int { snapshot().inputNumberOfChannels }
    /// Playback channels of the devices in use (…CurrentHardwareOutputNumberChannels).
    public var outputNumberOfChannels: Int { snapshot().outputNumberOfChannels }
    /// Whether something can be recorded (kAudioSessionProperty_AudioInputAvailable): a device
    /// in use captures, or the backend knows an input (an ALSA card with a capture PCM).
    public var isInputAvailable: Bool { snapshot().isInputAvailable }
    /// The route now: the devices in use (the backend's route when it reported one).
    public var currentRoute: AudioSessionRoute { snapshot().currentRoute }
    /// The hardware output volume 0…1 (the card's master control; 1 when none is known).
    public var outputVolume: Float { snapshot().outputVolume }
    /// Whether another program plays now (kAudioSessionProperty_OtherAudioIsPlaying).
    public var isOtherAudioPlaying: Bool {
        let (reported, backend) = lock.withLock { (otherAudioPlaying, backendValue) }
        return reported ?? backend.isOtherAudioPlaying
    }

    // MARK: Devices in use

    /// Counts `unit`'s device among the session's (its rate, period, channels, route).
    /// Queues and input queues call it for the units they play and record through.
    public func use(_ unit: IOUnit) {
        lock.withLock {
            units.removeAll { $0.unit == nil }
            guard !units.contains(where: { $0.unit === unit }) else { return }
            units.append(WeakUnit(unit: unit))
        }
        delivery.async { self.refreshProperties() }
    }

    /// The configuration a device opened for the session's participants gets: the
    /// preferred rate and period where set.
    func applyingPreferences(to configuration: AudioDeviceConfiguration) -> AudioDeviceConfiguration {
        let (rate, duration) = lock.withLock { (preferredRate, preferredDuration) }
        var settings = configuration
        if let rate { settings.sampleRate = Int(rate.rounded()) }
        if let duration {
            settings.periodFrames = min(max(Int((duration * Double(settings.sampleRate)).rounded()), 16), 65536)
        }
        return settings
    }

    /// The current values, read together.
    func snapshot() -> AudioSessionSnapshot {
        let (held, vanished, route, volume, backend) = lock.withLock {
            (units.compactMap { $0.unit }, vanishedDevices, reportedRoute, reportedVolume, backendValue)
        }
        var devices: [DeviceInUse] = []
        for unit in held {
            guard let device = unit.device, !vanished.contains(unit.deviceName) else { continue }
            devices.append(DeviceInUse(name: unit.deviceName, device: device))
        }
        let playing = devices.filter { $0.device.format.outputChannels > 0 }
        let capturing = devices.filter { $0.device.format.inputChannels > 0 }
        let main: DeviceFormat? = (playing.first ?? capturing.first)?.device.format
        // Without a device: what devices open at by default (a preference is not a grant).
        let defaults = AudioDeviceConfiguration()
        let sampleRate = Double(main?.sampleRate ?? defaults.sampleRate)
        let ioBufferDuration = main.map { Double($0.periodFrames) / Double($0.sampleRate) } ?? Double(defaults.periodFrames) / Double(defaults.sampleRate)
        func ports(_ list: [DeviceInUse], input: Bool) -> [AudioSessionPort] {
            var seen: Set<String> = []
            var result: [AudioSessionPort] = []
            for entry in list where seen.insert(entry.name).inserted {
                let driver = entry.device.driver
                let roles = backend.portRoles(forDevice: entry.name, driver: driver, input: input)
                result.append(AudioSessionPort(name: entry.name, roles: roles ?? [driver == "alsa" ? .unknown : .virtual]))
            }
            return result
        }
        return AudioSessionSnapshot(
            sampleRate: sampleRate,
            ioBufferDuration: ioBufferDuration,
            inputNumberOfChannels: capturing.first?.device.format.inputChannels ?? 0,
            outputNumberOfChannels: playing.first?.device.format.outputChannels ?? 0,
            isInputAvailable: !capturing.isEmpty || backend.isInputAvailable,
            currentRoute: route ?? AudioSessionRoute(outputs: ports(playing, input: false), inputs: ports(capturing, input: true)),
            outputVolume: volume ?? backend.outputVolume ?? 1)
    }

    struct DeviceInUse {
        var name: String
        var device: any AudioDevice
    }

    /// Reads the current values and calls the listeners of those that changed (delivery queue).
    func refreshProperties() {
        let now = snapshot()
        let changed = lock.withLock { () -> [AudioSessionProperty] in
            defer { lastSnapshot = now }
            return lastSnapshot.map { now.changes(from: $0) } ?? []
        }
        notify(changed: changed)
    }
}
