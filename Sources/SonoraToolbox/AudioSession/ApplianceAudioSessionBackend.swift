import Foundation
import SonoraCore
import SonoraHAL

/// The session's backend when `sonora run` owns the sound card: activation is the
/// appliance's decision (`session_activate` over its socket; a refusal comes back with the
/// policy's status and who holds the device), and the appliance's events — interruptions,
/// ducks, route changes — become the session's, in the order they arrive.
///
/// The session talks over a connection of its own; the program's streams (the `sonora:`
/// devices its queues and players open) have theirs. The appliance knows both as one
/// program by its pid.
public final class ApplianceAudioSessionBackend: AudioSessionBackend, @unchecked Sendable {
    public let connection: ApplianceConnection
    public var name: String { "appliance \(connection.path)" }
    private let lock = NSLock()
    private var sink: (@Sendable (AudioSessionBackendEvent) -> Void)?
    private var route = AudioSessionRoute()

    /// Attaches to the appliance at `path` (nil: `SONORA_SERVER`, else the default path).
    public init(path: String? = nil, programName: String = ApplianceSocket.programName) throws(AudioError) {
        connection = try ApplianceConnection.connect(path: path, name: programName)
        let format = connection.serverFormat
        route = AudioSessionRoute(
            outputs: format.outputChannels > 0 ? [AudioSessionPort(name: format.device, roles: [.virtual])] : [],
            inputs: format.inputChannels > 0 ? [AudioSessionPort(name: format.device, roles: [.virtual])] : [])
        connection.onEvent { [weak self] event in self?.received(event) }
    }

    deinit { connection.close() }

    /// The session of a program when an appliance runs (at `SONORA_SERVER` or the default
    /// path), else nil: the program's session is then its own.
    public static func ifRunning(path: String? = nil) -> ApplianceAudioSessionBackend? {
        guard isApplianceRunning(path: path) else { return nil }
        return try? ApplianceAudioSessionBackend(path: path)
    }

    public func start(events: @escaping @Sendable (AudioSessionBackendEvent) -> Void) {
        let current = lock.withLock { () -> AudioSessionRoute in
            sink = events
            return route
        }
        events(.routeChange(reason: .unknown, route: current))
    }

    public func activate(_ request: AudioSessionActivationRequest) throws(AudioError) {
        var fields: [String: ApplianceValue] = [
            "category": .string(request.category.rawValue),
            "options": .array(request.options.names.map { .string($0) }),
        ]
        if let role = request.role { fields["role"] = .string(role) }
        let reply = try connection.request("session_activate", fields)
        if let gain = reply["gainDB"]?.doubleValue, gain < 0 {
            // Activated while another session ducks this one.
            emit(.duck(AudioSessionDuck(gainDB: gain, isActive: true)))
        }
    }

    public func deactivate(notifyOthers: Bool) throws(AudioError) {
        _ = try connection.request("session_deactivate", ["notify_others": .bool(notifyOthers)])
    }

    public var isInputAvailable: Bool { connection.serverFormat.inputChannels > 0 }

    public func portRoles(forDevice name: String, driver: String, input: Bool) -> [AudioSessionPortRole]? {
        driver == "sonora" ? [.virtual] : nil
    }

    private func emit(_ event: AudioSessionBackendEvent) {
        let deliver = lock.withLock { sink }
        deliver?(event)
    }

    private func received(_ event: ApplianceEvent) {
        switch event {
        case .interruptionBegan:
            emit(.interruptionBegan)
        case .interruptionEnded(let resume):
            emit(.interruptionEnded(shouldResume: resume))
        case .duck(let gain, let active):
            emit(.duck(AudioSessionDuck(gainDB: gain, isActive: active)))
        case .routeChange(let reason, let outputs, let inputs):
            let new = AudioSessionRoute(
                outputs: outputs.map { AudioSessionPort(name: $0, roles: [.virtual]) },
                inputs: inputs.map { AudioSessionPort(name: $0, roles: [.virtual]) })
            lock.withLock { route = new }
            emit(.routeChange(reason: AudioSessionRouteChangeReason(wireName: reason), route: new))
        case .streamRemoved:
            break
        case .sessionActivated(let category):
            if let category = AudioSessionCategory(rawValue: category) { emit(.activatedByOwner(category: category)) }
        case .disconnected:
            // The appliance went away: the session's audio has nowhere to go until it is back.
            emit(.interruptionBegan)
            emit(.routeChange(reason: .oldDeviceUnavailable, route: AudioSessionRoute()))
        }
    }
}
