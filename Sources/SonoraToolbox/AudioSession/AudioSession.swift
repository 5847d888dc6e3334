import Dispatch
import Foundation
import SonoraCore
import SonoraHAL
import SonoraUnits

/// The program's audio session (AVAudioSession / Audio Session Services): how its audio
/// behaves beside everyone else's. One per process, `AudioSession.shared`.
///
/// - Category and options say what the audio is for (`setCategory(_:options:)`);
///   `setActive(_:options:)` puts them into effect — asking the backend, which may refuse
///   (another session of higher priority holds the device: an `AudioError` with Core
///   Audio's session status and the holder named).
/// - Interruptions, route changes and duck notices reach the session's participants first
///   (Table 7-2 of the reference documents: queues, players and recorders pause and may
///   resume; audio units and graphs stop; system sounds go silent; a registered context is
///   suspended), then its listeners — in the order they happened, on the session's one
///   serial queue, never on a realtime thread. Interruptions reach an *active* session
///   only (as on iPhone OS): a program that never activates its session keeps the device
///   handling it had (a vanished device stops its queues) and hears route changes alone.
/// - Properties (AudioSession+Properties) read the devices the participants use, with
///   listeners for the ones the hardware changes.
///
/// Queues, input queues, players, recorders and system-sound players made in the process
/// register themselves with the session; graphs, I/O units and other participants
/// (the OpenAL-style context) register with `register(_:)`.
///
/// The backend decides: `LocalAudioSessionBackend` (no appliance: always granted,
/// interruptions from the program's own devices) until the program installs another
/// (`setBackend`, e.g. the appliance's adapter when `sonora run` serves the card).
public final class AudioSession: @unchecked Sendable {
    /// The process's session.
    /// When `sonora run` serves sessions (at `SONORA_SERVER`, else the default path) the
    /// process's session is the appliance's to decide; otherwise its own (local).
    public static let shared = AudioSession(backend: ApplianceAudioSessionBackend.ifRunning() ?? LocalAudioSessionBackend())

    /// Tests (and tools hosting several independent "programs" in one process) make the
    /// participants created inside `AudioSession.$scoped.withValue(session) { … }` belong to
    /// `session` instead of `shared`.
    @TaskLocal static var scoped: AudioSession?

    /// The session a participant created now belongs to.
    static var current: AudioSession { scoped ?? shared }

    /// Runs `body` with this session as `current`: a player, recorder or system-sound player
    /// makes its queues later (prepare, play) in its own session, not the caller's.
    func governing<T>(_ body: () throws(AudioError) -> T) throws(AudioError) -> T {
        let result = Self.$scoped.withValue(self) { () -> Result<T, AudioError> in
            do throws(AudioError) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    let lock = NSLock()
    /// Where everything the session tells anyone happens, in order.
    let delivery = DispatchQueue(label: "sonora.audio-session")

    var backendValue: any AudioSessionBackend
    var categoryValue: AudioSessionCategory = .soloAmbient
    var optionsValue: AudioSessionCategoryOptions = []
    var roleValue: String?
    var active = false
    var interrupted = false
    var preferredRate: Double?
    var preferredDuration: Double?
    var participants: [AudioSessionParticipantEntry] = []
    var listeners: [Int: AudioSessionListenerEntry] = [:]
    var nextListener = 0
    var units: [WeakUnit] = []
    var vanishedDevices: Set<String> = []
    var reportedRoute: AudioSessionRoute?
    var reportedVolume: Float?
    var otherAudioPlaying: Bool?
    var lastSnapshot: AudioSessionSnapshot?

    struct WeakUnit { weak var unit: IOUnit? }

    /// A session deciding through `backend` (tests pass a scripted one).
    init(backend: any AudioSessionBackend) {
        backendValue = backend
        connect(backend)
        lastSnapshot = snapshot()
    }

    private func connect(_ backend: any AudioSessionBackend) {
        backend.start { [weak self, weak backend] event in
            // A backend replaced by `setBackend` speaks no more.
            guard let self, let backend, self.lock.withLock({ self.backendValue === backend }) else { return }
            self.delivery.async { self.handle(event) }
        }
    }

    /// The backend deciding now.
    public var backend: any AudioSessionBackend { lock.withLock { backendValue } }

    /// Installs another backend (the appliance's adapter when one runs). Only while inactive.
    public func setBackend(_ backend: any AudioSessionBackend) throws(AudioError) {
        let refusal = lock.withLock { () -> AudioError? in
            guard !active else {
                return AudioError(.sessionNotActive, "AudioSession.setBackend: \(backend.name): deactivate the session first (it is active on \(backendValue.name))")
            }
            backendValue = backend
            return nil
        }
        if let refusal { throw refusal }
        connect(backend)
    }

    // MARK: Category

    /// kAudioSessionProperty_AudioCategory (default soloAmbient, as on iPhone OS).
    public var category: AudioSessionCategory { lock.withLock { categoryValue } }
    /// The category's overrides.
    public var categoryOptions: AudioSessionCategoryOptions { lock.withLock { optionsValue } }
    /// The policy role asked for at activation (nil: the appliance's role for the category).
    public var role: String? {
        get { lock.withLock { roleValue } }
        set { lock.withLock { roleValue = newValue } }
    }

    /// Sets the category and its options. Refused (-50, parameter error) for options the
    /// category cannot have: defaultToSpeaker outside playAndRecord, mixing or ducking in a
    /// category that plays nothing. While active, the backend is asked again (it may refuse:
    /// the old category stays) and a route change "category change" follows.
    public func setCategory(_ category: AudioSessionCategory, options: AudioSessionCategoryOptions = []) throws(AudioError) {
        let call = "AudioSession.setCategory(\(category.rawValue), options: \(options.names))"
        if options.contains(.defaultToSpeaker), category != .playAndRecord {
            throw AudioError(.parameterError, "\(call): defaultToSpeaker is an option of playAndRecord only")
        }
        if !options.isDisjoint(with: [.mixWithOthers, .duckOthers]), !category.usesOutput {
            throw AudioError(.parameterError, "\(call): \(category.rawValue) plays nothing, so it cannot mix with or duck others")
        }
        let (wasActive, backend, role, changed) = lock.withLock { () -> (Bool, any AudioSessionBackend, String?, Bool) in
            (active, backendValue, roleValue, categoryValue != category || optionsValue != options)
        }
        guard changed else { return }
        if wasActive {
            do {
                try backend.activate(AudioSessionActivationRequest(category: category, options: options, role: role))
            } catch {
                throw AudioError(error.code, "\(call): \(backend.name): \(error.message)")
            }
        }
        lock.withLock {
            categoryValue = category
            optionsValue = options
        }
        if wasActive { delivery.async { self.changeRoute(.categoryChange, route: nil) } }
    }

    // MARK: Activation

    /// Whether the session is active (its category in effect).
    public var isActive: Bool { lock.withLock { active } }
    /// Whether an interruption is under way (began, not yet ended).
    public var isInterrupted: Bool { lock.withLock { interrupted } }

    /// Activates (the backend may refuse: the error carries its status, e.g. '!pri', and
    /// names the holder) or deactivates the session; `.notifyOthersOnDeactivation` tells the
    /// sessions this one interrupted that they may resume.
    public func setActive(_ active: Bool, options: AudioSessionSetActiveOptions = []) throws(AudioError) {
        let (isActive, backend, request) = lock.withLock {
            (self.active, backendValue, AudioSessionActivationRequest(category: categoryValue, options: optionsValue, role: roleValue))
        }
        guard active != isActive else { return }
        if active {
            do {
                try backend.activate(request)
            } catch {
                throw AudioError(error.code, "AudioSession.setActive(true): \(request.category.rawValue) on \(backend.name): \(error.message)")
            }
        } else {
            do {
                try backend.deactivate(notifyOthers: options.contains(.notifyOthersOnDeactivation))
            } catch {
                throw AudioError(error.code, "AudioSession.setActive(false): \(backend.name): \(error.message)")
            }
        }
        lock.withLock {
            self.active = active
            // A session that leaves is no longer interrupted; what it paused stays paused.
            if !active { interrupted = false }
        }
    }

    // MARK: Events

    /// One event of the backend, on the delivery queue: participants first, then listeners.
    func handle(_ event: AudioSessionBackendEvent) {
        switch event {
        case .interruptionBegan:
            let begins = lock.withLock { () -> Bool in
                guard active, !interrupted else { return false }
                interrupted = true
                return true
            }
            guard begins else { return }
            for entry in liveParticipants() { entry.interruptionBegan() }
            notify(.interruption(.began))
        case .interruptionEnded(let shouldResume):
            let ends = lock.withLock { () -> Bool in
                guard interrupted else { return false }
                interrupted = false
                return true
            }
            guard ends else { return }
            for entry in liveParticipants() { entry.interruptionEnded(shouldResume: shouldResume) }
            notify(.interruption(.ended(shouldResume: shouldResume)))
        case .duck(let duck):
            // Not gated on `active`: a backend may report the duck an activation starts
            // under while `setActive` is still returning (the appliance ducks only active
            // sessions, so nothing else arrives inactive).
            notify(.duck(duck))
        case .routeChange(let reason, let route):
            changeRoute(reason, route: route)
        case .otherAudioPlaying(let playing):
            lock.withLock { otherAudioPlaying = playing }
        case .outputVolume(let volume):
            lock.withLock { reportedVolume = volume }
            refreshProperties()
        case .activatedByOwner(let category):
            // The category in effect is the one the owner activated; a session the program
            // activated itself is never changed by it.
            lock.withLock {
                guard !active else { return }
                active = true
                categoryValue = category
            }
        }
    }

    /// A route change (delivery queue): the route before and after, then property listeners.
    func changeRoute(_ reason: AudioSessionRouteChangeReason, route: AudioSessionRoute?) {
        let previous = lock.withLock { lastSnapshot?.currentRoute } ?? AudioSessionRoute()
        if let route { lock.withLock { reportedRoute = route } }
        let current = currentRoute
        notify(.routeChange(AudioSessionRouteChange(reason: reason, previousRoute: previous, currentRoute: current)))
        refreshProperties()
    }

    /// What a participant's device watcher saw (a control thread): the device's availability
    /// for the route, then the backend (the local one makes interruptions of it).
    func deviceReported(_ event: DeviceEvent, device: String) {
        let backend = lock.withLock { () -> any AudioSessionBackend in
            switch event {
            case .interruptionBegan: vanishedDevices.insert(device)
            case .interruptionEnded: vanishedDevices.remove(device)
            default: break
            }
            return backendValue
        }
        backend.deviceReported(event, device: device)
    }

    /// Whether a lost device becomes an interruption of this session (active, on a backend that
    /// does so): its watchers then leave the queues to the session (paused, resumed with the
    /// device) instead of stopping them.
    var handlesDeviceLoss: Bool { lock.withLock { active && backendValue.interruptsOnDeviceLoss } }

    /// A queue started again on a device its watcher had seen vanish (that watcher gave up
    /// at the vanish, so it never sees the device come back): the device is back.
    func deviceStartedAgain(_ device: String) {
        guard lock.withLock({ vanishedDevices.contains(device) }) else { return }
        deviceReported(.interruptionEnded(attempts: 0), device: device)
    }

    /// Waits until everything handed to the delivery queue so far has been delivered (tests).
    func waitForDelivery() { delivery.sync {} }
}
