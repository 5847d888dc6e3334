import Dispatch
import Logging
import SonoraCore
import SonoraHAL

#if canImport(Glibc)
import Glibc
#endif

/// The appliance as session server: the HAL's `ApplianceServer` (socket, shared-memory
/// streams) with the config's policy deciding about sessions. Session ops become calls on
/// the `SessionCoordinator`; its effects become stream gains (fades, ducks) and events to
/// the clients. The streams' table is what the pipeline's `clients` node mixes.
public final class ApplianceSessionServer: @unchecked Sendable {
    public let server: ApplianceServer
    public let coordinator: SessionCoordinator
    private let bridge: Bridge

    /// Binds the policy's socket for a device of `format`.
    public init(policy: SessionPolicy, socketPath: String, group: gid_t?, maximumStreams: Int, format: ApplianceServerFormat, logger: Logger) throws(AudioError) {
        let bridge = Bridge(fadeMilliseconds: policy.fadeMilliseconds)
        let coordinator = SessionCoordinator(policy: policy, sampleRate: format.sampleRate, target: bridge)
        bridge.coordinator = coordinator
        server = try ApplianceServer(
            path: socketPath, group: group,
            limits: ApplianceServerLimits(maximumStreams: maximumStreams, maximumClients: max(maximumStreams, 64)),
            format: format, handler: bridge, logger: logger)
        bridge.server = server
        self.bridge = bridge
        self.coordinator = coordinator
    }

    public var streams: ApplianceStreamTable { server.streams }
    public func start() { server.start() }
    public func stop() { server.stop() }

    /// Tells every attached program about a change of the appliance's device, as a route
    /// change (in the order the device reported them): the device failing or vanishing is
    /// "old device unavailable", its coming back "new device available", a resume after a
    /// system suspend "wake from sleep". Other device events are not the clients' business.
    public func deviceReported(_ event: DeviceEvent) {
        let reason: String
        var outputs: [String] = [server.format.device]
        switch event {
        case .interruptionBegan:
            reason = "oldDeviceUnavailable"
            outputs = []
        case .interruptionEnded: reason = "newDeviceAvailable"
        case .resumed: reason = "wakeFromSleep"
        case .xrun, .renderError, .formatChanged: return
        }
        let inputs = server.format.inputChannels > 0 ? outputs : []
        for pid in Set(server.clients.map(\.pid)) {
            server.send(.routeChange(reason: reason, outputs: outputs, inputs: inputs), toClient: pid)
        }
    }

    /// The appliance moved to another device (`sonora ctl device`, or a reload whose device
    /// section changed): programs attaching from now on are told at hello, and every attached
    /// program hears a route change with reason "override" (the route was chosen for it).
    public func deviceSwitched(to name: String) {
        server.setDeviceName(name)
        let outputs = [name]
        let inputs = server.format.inputChannels > 0 ? outputs : []
        for pid in Set(server.clients.map(\.pid)) {
            server.send(.routeChange(reason: "override", outputs: outputs, inputs: inputs), toClient: pid)
        }
    }

    /// A role's routing group in the stream table: its place in the policy's roles, from 1
    /// (groups above 63 share 63); 0 for no role.
    public static func routingGroup(of role: String?, in roles: [SessionRole]) -> Int {
        guard let role, let index = roles.firstIndex(where: { $0.name == role }) else { return 0 }
        return min(index + 1, 63)
    }

    /// Connects the coordinator's effects to the server and the server's ops to the coordinator.
    final class Bridge: ApplianceSessionHandler, SessionEffectTarget, @unchecked Sendable {
        weak var server: ApplianceServer?
        weak var coordinator: SessionCoordinator?
        /// Programs seen, so a session op from a program attaches it first.
        private let known = ControlLock<Set<Int32>>([])
        /// Programs whose session the appliance activated for them (they opened a stream
        /// without activating it), so a second direction can widen the category.
        private let implicitlyActive = ControlLock<Set<Int32>>([])
        /// Notices go out in order from here. An interruption's is sent once its fade-out
        /// is over: told at once, the program would pause its audio (silence at once, a
        /// click) before the appliance had faded it.
        private let notices = DispatchQueue(label: "sonora.session-notices")
        private let fadeMicroseconds: UInt32

        init(fadeMilliseconds: Int) {
            fadeMicroseconds = UInt32(max(0, fadeMilliseconds)) * 1000
        }

        func setGain(pid: Int32, gain: Float, rampFrames: Int) {
            server?.streams.setGain(pid: pid, gain: gain, rampFrames: rampFrames)
        }

        func deliver(_ notice: SessionNotice, toClient pid: Int32) {
            let wait = notice == .interruptionBegan ? fadeMicroseconds : 0
            notices.async { [weak self] in
                if wait > 0 { usleep(wait) }
                self?.server?.send(notice.applianceEvent, toClient: pid)
            }
        }

        private func attach(_ client: ApplianceClientInfo) {
            guard let coordinator else { return }
            let new = known.withLock { $0.insert(client.pid).inserted }
            if new { coordinator.attach(pid: client.pid, name: client.name) }
        }

        func handle(op: String, fields: [String: ApplianceValue], from client: ApplianceClientInfo) throws(AudioError) -> [String: ApplianceValue] {
            guard let coordinator else { throw AudioError(.illegalOperation, "the appliance is stopping") }
            attach(client)
            switch op {
            case "session_activate":
                implicitlyActive.withLock { _ = $0.remove(client.pid) }
                guard let category = fields["category"]?.stringValue else {
                    throw AudioError(.parameterError, "session_activate needs \"category\" (ambient, soloAmbient, playback, record, playAndRecord, audioProcessing)")
                }
                let options = fields["options"]?.arrayValue?.compactMap(\.stringValue) ?? []
                let activation = try coordinator.activate(pid: client.pid, category: category, options: options, role: fields["role"]?.stringValue)
                route(client.pid, role: activation.role)
                return activation.applianceFields
            case "session_deactivate":
                coordinator.deactivate(pid: client.pid, notifyOthers: fields["notify_others"]?.boolValue ?? true)
                return [:]
            case "session_status":
                let streams = Dictionary(grouping: server?.streams.snapshot() ?? [], by: \.pid).mapValues(\.count)
                return ["clients": .array(coordinator.status().map { status in
                    var status = status
                    status.streams = streams[status.pid] ?? 0
                    return status.applianceValue
                })]
            default:
                throw AudioError(.parameterError, "unknown op '\(op)'")
            }
        }

        /// Puts the program's streams in its role's routing group (the role's place in the
        /// policy, from 1; 0 for none), so the `clients` node for that role takes them.
        private func route(_ pid: Int32, role: String?) {
            server?.streams.setGroup(pid: pid, group: ApplianceSessionServer.routingGroup(of: role, in: coordinator?.policy.roles ?? []))
        }

        func clientDetached(_ client: ApplianceClientInfo) {
            // One program may hold several connections (its session and its streams): the
            // program's session ends when its last connection goes.
            let remaining = server?.clients.contains { $0.pid == client.pid && $0.connection != client.connection } ?? false
            guard !remaining else { return }
            known.withLock { _ = $0.remove(client.pid) }
            implicitlyActive.withLock { _ = $0.remove(client.pid) }
            coordinator?.detach(pid: client.pid)
            server?.streams.forget(pid: client.pid)
        }

        func mayOpenStream(direction: ApplianceStreamDirection, client: ApplianceClientInfo) -> String? {
            guard let coordinator else { return "the appliance is stopping" }
            attach(client)
            // A program that plays or records without activating its session has it
            // activated for it, as starting an audio queue does on iPhone OS: the default
            // category (soloAmbient) to play, record to record — and playAndRecord once it
            // does both (a duplex device opens its playback stream first). Refused there,
            // refused here. A session the program activated itself is left as it is.
            let status = coordinator.status().first { $0.pid == client.pid }
            let implicit = implicitlyActive.withLock { $0.contains(client.pid) }
            var category: String?
            if status?.active != true {
                category = direction == .capture ? "record" : "soloAmbient"
            } else if implicit, direction == .capture, status?.category == .soloAmbient {
                category = "playAndRecord"
            } else if implicit, direction == .playback, status?.category == .record {
                category = "playAndRecord"
            }
            if let category {
                do {
                    let activation = try coordinator.activate(pid: client.pid, category: category, options: [], role: nil)
                    route(client.pid, role: activation.role)
                    implicitlyActive.withLock { _ = $0.insert(client.pid) }
                    // The program's own session learns it is active (so interruptions pause its
                    // queues, not only fade them), in order with the notices.
                    let pid = client.pid
                    notices.async { [weak self] in self?.server?.send(.sessionActivated(category: category), toClient: pid) }
                } catch {
                    return "the session policy refused \(client.name)'s session: \(error.message)"
                }
            }
            guard direction == .capture else { return nil }
            return coordinator.mayRecord(pid: client.pid)
        }
    }
}
