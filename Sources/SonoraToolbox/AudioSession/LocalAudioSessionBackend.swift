import Foundation
import SonoraCore
import SonoraHAL

/// The session's backend without an appliance: the program opens ALSA itself, so activation
/// is always granted, and interruptions come from the program's own devices — a device a
/// participant uses that vanishes (the HAL's `interruptionBegan`) begins an interruption and
/// changes the route (old device unavailable); when every vanished device is back
/// (`interruptionEnded`), the route changes again (new device available) and the
/// interruption ends with "should resume" — so an active session's queues and players on a
/// device that vanishes pause and play on when it is back (an inactive session's stop, as
/// they always did). A device resumed after a system suspend is a
/// route change "wake from sleep".
public final class LocalAudioSessionBackend: AudioSessionBackend, @unchecked Sendable {
    public var name: String { "local" }
    private let lock = NSLock()
    private var sink: (@Sendable (AudioSessionBackendEvent) -> Void)?
    private var vanished: Set<String> = []

    public init() {}

    public func start(events: @escaping @Sendable (AudioSessionBackendEvent) -> Void) {
        lock.withLock { sink = events }
    }

    public func activate(_ request: AudioSessionActivationRequest) throws(AudioError) {}
    public func deactivate(notifyOthers: Bool) throws(AudioError) {}

    public func deviceReported(_ event: DeviceEvent, device: String) {
        let (events, deliver) = lock.withLock { () -> ([AudioSessionBackendEvent], (@Sendable (AudioSessionBackendEvent) -> Void)?) in
            let events: [AudioSessionBackendEvent]
            switch event {
            case .interruptionBegan:
                guard vanished.insert(device).inserted else { return ([], sink) }
                let began: [AudioSessionBackendEvent] = vanished.count == 1 ? [.interruptionBegan] : []
                events = began + [.routeChange(reason: .oldDeviceUnavailable, route: nil)]
            case .interruptionEnded:
                guard vanished.remove(device) != nil else { return ([], sink) }
                let ended: [AudioSessionBackendEvent] = vanished.isEmpty ? [.interruptionEnded(shouldResume: true)] : []
                events = [.routeChange(reason: .newDeviceAvailable, route: nil)] + ended
            case .resumed:
                events = [.routeChange(reason: .wakeFromSleep, route: nil)]
            case .xrun, .renderError, .formatChanged:
                events = []
            }
            return (events, sink)
        }
        for event in events { deliver?(event) }
    }

    public var interruptsOnDeviceLoss: Bool { true }
    public var isInputAvailable: Bool { ALSACardControls.hasCapture() }
    public var outputVolume: Float? { ALSACardControls.outputVolume() }

    public func portRoles(forDevice name: String, driver: String, input: Bool) -> [AudioSessionPortRole]? {
        guard driver == "alsa" else { return [.virtual] }
        guard let roles = ALSACardControls.roles(ofPCM: name) else { return [.unknown] }
        let side = input ? roles.inputs : roles.outputs
        return side.isEmpty ? [.unknown] : side
    }
}
