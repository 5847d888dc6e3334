import SonoraCore

/// A running source and sink of periods: an ALSA PCM pair, the timer-paced null device,
/// the offline device, or the in-process loopback. Each runs one I/O thread (the offline
/// device can also be driven by its caller) that calls an `IOProcedure` once per period.
/// Open one by name through `AudioDevices` (`DeviceSpecifier` parses the names).
public protocol AudioDevice: AnyObject, Sendable {
    /// The driver: "alsa", "null", "offline", "inprocess" or "sonora" (the appliance client).
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
    /// Every wake-up's lateness since the device was made, as a histogram (empty for
    /// devices that do not measure it).
    var wakeUpLateness: LatenessDistribution { get }
    /// Who follows a change of the device's format while it runs (JACK's buffer size or
    /// rate; a server back at another rate), or nil. The handler runs on the device's own
    /// control thread while the device calls no cycle, with the new `format`; the device
    /// resumes calling the procedure, at the new format, when it returns — so the owner
    /// re-initializes what depends on the rate or period (a graph) there, off the realtime
    /// thread. A `.formatChanged` event is posted as well. Devices whose format cannot
    /// change while they run ignore it (the default).
    func setFormatChangeHandler(_ handler: DeviceFormatChangeHandler?)
}

/// Called by a device whose format changed under it (see `AudioDevice.setFormatChangeHandler`).
public typealias DeviceFormatChangeHandler = @Sendable (DeviceFormat) -> Void

extension AudioDevice {
    public var wakeUpLateness: LatenessDistribution { LatenessDistribution() }
    public func setFormatChangeHandler(_ handler: DeviceFormatChangeHandler?) {}
}
