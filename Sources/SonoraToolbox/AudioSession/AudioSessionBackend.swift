import SonoraCore
import SonoraHAL

/// What `setActive(true)` asks of a backend.
public struct AudioSessionActivationRequest: Sendable, Hashable {
    public var category: AudioSessionCategory
    public var options: AudioSessionCategoryOptions
    /// The policy role asked for (nil: the policy's role for the category).
    public var role: String?

    public init(category: AudioSessionCategory, options: AudioSessionCategoryOptions, role: String?) {
        self.category = category
        self.options = options
        self.role = role
    }
}

/// What a backend tells the session, from any thread (the session delivers it in order on
/// its own serial queue). The appliance's events map one to one: `interruption {state,
/// should_resume}`, `duck {gain_db, active}`, `route_change {reason, outputs, inputs}`.
public enum AudioSessionBackendEvent: Sendable, Hashable {
    case interruptionBegan
    case interruptionEnded(shouldResume: Bool)
    case duck(AudioSessionDuck)
    /// The route changed; `route` nil: the session works the route out from the devices its
    /// participants use (the local backend), otherwise the backend's (the appliance's devices).
    case routeChange(reason: AudioSessionRouteChangeReason, route: AudioSessionRoute?)
    /// Whether another program plays now changed.
    case otherAudioPlaying(Bool)
    /// The hardware output volume changed (0…1).
    case outputVolume(Float)
    /// Whoever owns the device activated the session for the program, in `category` (the
    /// appliance does when a program plays or records without activating its session, as
    /// starting a queue does on iPhone OS): from now on it is active and interruptible.
    case activatedByOwner(category: AudioSessionCategory)
}

/// Who holds the device when an activation is refused (the policy's holder).
public struct AudioSessionHolder: Sendable, Hashable, CustomStringConvertible {
    public var pid: Int32
    public var name: String
    public var role: String?

    public init(pid: Int32, name: String, role: String?) {
        self.pid = pid
        self.name = name
        self.role = role
    }

    /// `'intercom' (pid 4242, role intercom)`.
    public var description: String { "'\(name)' (pid \(pid)\(role.map { ", role \($0)" } ?? ""))" }
}

extension AudioError {
    /// The error a backend throws when its activation is refused: Core Audio's session status
    /// (`.sessionInsufficientPriority` '!pri', `.sessionCannotInterruptOthers` '!int',
    /// `.sessionIncompatibleCategory` '!cat' …) and a message naming who holds the device.
    public static func sessionRefused(_ code: Code, reason: String, holder: AudioSessionHolder?) -> AudioError {
        AudioError(code, "activation refused: \(reason)\(holder.map { "; the device is held by \($0)" } ?? "")")
    }
}

/// Where a session's decisions are made: in the program itself (`LocalAudioSessionBackend`,
/// no appliance) or by the appliance that owns the sound card (its adapter sends
/// `session_activate` / `session_deactivate` over an `ApplianceConnection` and turns the
/// connection's events into `AudioSessionBackendEvent`s).
///
/// The session calls every method from the thread of its caller (activate, deactivate) or
/// its device watchers (deviceReported), never from a realtime thread.
public protocol AudioSessionBackend: AnyObject, Sendable {
    /// For messages: "local", "appliance /run/sonora/server.sock".
    var name: String { get }
    /// Called once when the backend is installed: where its events go (any thread).
    func start(events: @escaping @Sendable (AudioSessionBackendEvent) -> Void)
    /// Activation: returns when granted; throws the refusal (status and holder, see
    /// `AudioError.sessionRefused`). Called again when the category changes while active.
    func activate(_ request: AudioSessionActivationRequest) throws(AudioError)
    /// Deactivation; `notifyOthers`: the sessions this one interrupted are told they may resume.
    func deactivate(notifyOthers: Bool) throws(AudioError)
    /// A HAL event of a device one of the session's participants uses, as that participant's
    /// watcher took it (an ALSA PCM that vanished or came back). The appliance backend ignores
    /// them (its server reports its own devices); the local backend makes them interruptions.
    func deviceReported(_ event: DeviceEvent, device: String)
    /// Whether `deviceReported` makes a lost device an interruption of the session (the local
    /// backend): the queues on that device then pause and resume with it rather than stop.
    var interruptsOnDeviceLoss: Bool { get }
    /// Whether some other program's audio plays now.
    var isOtherAudioPlaying: Bool { get }
    /// Whether some input can be recorded from (beyond the devices the program has open).
    var isInputAvailable: Bool { get }
    /// The hardware output volume (0…1), nil when unknown.
    var outputVolume: Float? { get }
    /// The roles of the device the program opened by `name`, for its input or output side
    /// (nil: the session's own guess).
    func portRoles(forDevice name: String, driver: String, input: Bool) -> [AudioSessionPortRole]?
}

extension AudioSessionBackend {
    public func deviceReported(_ event: DeviceEvent, device: String) {}
    public var interruptsOnDeviceLoss: Bool { false }
    public var isOtherAudioPlaying: Bool { false }
    public var isInputAvailable: Bool { false }
    public var outputVolume: Float? { nil }
    public func portRoles(forDevice name: String, driver: String, input: Bool) -> [AudioSessionPortRole]? { nil }
}
