import Dispatch
import Foundation
import SonoraCore
import SonoraHAL
import SonoraUnits

/// A queue on an I/O unit of its own watches that unit's device while it plays, as a shared
/// output watches its device: a device that vanishes (the HAL's interruption) stops the queue
/// (IsRunning false with its listener, `stopReason`, every buffer back, the unit stopped); an
/// xrun or a re-open marks its timeline discontinuous.
///
/// Every 100 ms (50 ms leeway) rather than a shared output's 10: one timer per queue costs
/// CPU on a path the queue benchmark measures, and the stop only has to come, not to be
/// quick (the device is gone; the render side already plays silence).
extension AudioQueue {
    /// Starts watching (after the queue's own unit started); nothing on a shared output.
    func watchOwnUnit() {
        guard let (unit, target) = try? withLock({ () -> (IOUnit, QueueRenderTarget)? in
            guard unitWatcher == nil, attachment == nil, offlineFormat == nil,
                  let outputUnit, let outputTarget else { return nil }
            return (outputUnit, outputTarget)
        }) else { return }
        // The unit started: a device the session had from this watcher as vanished is back.
        session.deviceStartedAgain(unit.deviceName)
        let timer = DispatchSource.makeTimerSource(queue: DeviceWatchQueue.queue)
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100), leeway: .milliseconds(50))
        timer.setEventHandler { [weak self, weak unit, weak target] in
            guard let self, let unit, let target else { return }
            self.checkOwnDevice(unit, target: target)
        }
        _ = try? withLock { unitWatcher = timer }
        timer.resume()
    }

    /// Stops watching (the queue stopped, or left its unit).
    func stopWatchingOwnUnit() {
        let timer = try? withLock { () -> DispatchSourceTimer? in
            defer { unitWatcher = nil }
            return unitWatcher
        }
        timer?.cancel()
    }

    private func checkOwnDevice(_ unit: IOUnit, target: QueueRenderTarget) {
        guard unit.device != nil else { return }
        var vanished: DeviceEvent?
        var droppedTime = false
        /// What the session hears of (interruptions, re-opens, resumes), in order.
        var forSession: [DeviceEvent] = []
        for event in IOUnitUsers.shared.takeEvents(of: unit, for: self) {
            switch event {
            case .interruptionBegan: vanished = vanished ?? event
            case .xrun, .resumed, .interruptionEnded: droppedTime = true
            case .renderError, .formatChanged: break
            }
            switch event {
            case .interruptionBegan, .interruptionEnded, .resumed: forSession.append(event)
            case .xrun, .renderError, .formatChanged: break
            }
        }
        if droppedTime { target.markDiscontinuity() }
        // An active local session makes the loss an interruption: it pauses the queue, and this
        // watcher stays to see the device come back. Otherwise the queue stops, as it always did.
        if let vanished, !session.handlesDeviceLoss {
            stopWatchingOwnUnit()
            stopBecauseOutputFailed(AudioError(.queueInvalidDevice, "the device '\(unit.deviceName)' went away: \(vanished)"))
        }
        for event in forSession { session.deviceReported(event, device: unit.deviceName) }
    }
}
