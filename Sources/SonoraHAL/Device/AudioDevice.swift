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
}

extension AudioDevice {
    public var wakeUpLateness: LatenessDistribution { LatenessDistribution() }
}
