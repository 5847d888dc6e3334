import Dispatch
import Foundation
import SonoraCore
import SonoraHAL
import SonoraUnits

/// An input queue watches its I/O unit's device while it records, as an output queue on a
/// unit of its own does: a device that vanishes (the HAL's interruption) stops the queue
/// after it has delivered everything captured (IsRunning false with its listener, the
/// reason in `stopReason`), so a recording keeps what it had.
extension AudioInputQueue {
    /// Why the queue stopped by itself (its device went away), nil otherwise; a start clears it.
    public var stopReason: AudioError? { try? withLock { stopReasonValue } }

    /// Starts watching (after the unit started); nothing offline or when already watching.
    func watchInputUnit() {
        guard let unit = try? withLock({ () -> IOUnit? in unitWatcher == nil ? inputUnit : nil }) else { return }
        // The unit started: a device the session had from this watcher as vanished is back.
        session.deviceStartedAgain(unit.deviceName)
        let timer = DispatchSource.makeTimerSource(queue: DeviceWatchQueue.queue)
        // 100 ms: the stop only has to come (the device is gone; nothing more is captured).
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100), leeway: .milliseconds(50))
        timer.setEventHandler { [weak self, weak unit] in
            guard let self, let unit else { return }
            self.checkInputDevice(unit)
        }
        _ = try? withLock { unitWatcher = timer }
        timer.resume()
    }

    /// Stops watching (the queue stopped or is disposed of).
    func stopWatchingInputUnit() {
        let timer = try? withLock { () -> DispatchSourceTimer? in
            defer { unitWatcher = nil }
            return unitWatcher
        }
        timer?.cancel()
    }

    private func checkInputDevice(_ unit: IOUnit) {
        guard unit.device != nil else { return }
        let vanished = IOUnitUsers.shared.takeEvents(of: unit, for: self).first { if case .interruptionBegan = $0 { true } else { false } }
        guard let vanished else { return }
        stopWatchingInputUnit()
        _ = try? withLock { stopReasonValue = error(.queueInvalidDevice, "record", "the device '\(unit.deviceName)' went away: \(vanished)") }
        // Everything captured is delivered first; then IsRunning goes false with its listener.
        try? stop(immediate: false)
        // Then the session hears of it (its local backend: an interruption and a route change).
        session.deviceReported(vanished, device: unit.deviceName)
    }
}
