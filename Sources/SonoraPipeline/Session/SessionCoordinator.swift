import Foundation
import SonoraCore
import Synchronization

/// The appliance's session authority: holds the policy and the attached clients, decides
/// each request and carries the decision out on a `SessionEffectTarget` — gains first, then
/// the notice, effect by effect. Thread-safe: one lock around decision and delivery, so two
/// clients' requests never interleave their effects. No sockets: the appliance adapts it to
/// its server.
public final class SessionCoordinator: Sendable {
    // A pthread lock, not Swift's Mutex: ThreadSanitizer cannot see the futex, and reported
    // the policy shared by concurrent requests as raced (27 reports in one run).
    private let state: ControlLock<SessionPolicy>
    private let target: SessionEffectTarget

    public init(policy: SessionPolicy, sampleRate: Int, target: SessionEffectTarget) {
        var policy = policy
        policy.sampleRate = sampleRate
        state = ControlLock(policy)
        self.target = target
    }

    /// The policy with its clients now (a copy).
    public var policy: SessionPolicy { state.withLock { $0 } }

    public func attach(pid: Int32, name: String) {
        state.withLock { $0.attach(pid: pid, name: name) }
    }

    /// Activates `pid`'s session with a category and options by name (as the wire carries
    /// them). Throws AudioError: -50 for an unknown category, option or role; '!cat' for an
    /// option the category does not take; '!pri' when a higher-priority session holds the
    /// audio (the message names its pid, program and role); '!rec' when the role may not
    /// record; '!ini' for a client that never attached.
    public func activate(pid: Int32, category: String, options: [String], role: String?) throws(AudioError) -> SessionActivation {
        guard let parsedCategory = SessionCategory(rawValue: category) else {
            throw AudioError(.parameterError, "unknown category '\(Diagnostic.excerpt(category))'\(suggestion(for: category, in: SessionCategory.names)) (categories: \(SessionCategory.names.joined(separator: ", ")))")
        }
        let parsedOptions: SessionOptions
        switch SessionOptions.parse(options) {
        case .success(let value): parsedOptions = value
        case .failure(let unknown):
            let names = SessionOptions.named.map(\.name)
            throw AudioError(.parameterError, "unknown option '\(Diagnostic.excerpt(unknown.name))'\(suggestion(for: unknown.name, in: names)) (options: \(names.joined(separator: ", ")))")
        }
        let result: Result<SessionActivation, AudioError> = state.withLock { policy in
            switch policy.activate(pid: pid, category: parsedCategory, options: parsedOptions, role: role) {
            case .refused(let refusal):
                return .failure(refusal.error)
            case .granted(let effects):
                carryOut(effects, in: policy)
                let client = policy.client(pid)!
                return .success(SessionActivation(
                    role: client.role, priority: client.role.flatMap(policy.role(named:))?.priority, category: parsedCategory,
                    options: client.options.names, gainDB: client.duckDB ?? 0, effects: effects))
            }
        }
        return try result.get()
    }

    public func deactivate(pid: Int32, notifyOthers: Bool) {
        state.withLock { policy in carryOut(policy.deactivate(pid: pid, notifyOthers: notifyOthers), in: policy) }
    }

    /// The client is gone (closed or died): what its session did to others is undone.
    public func detach(pid: Int32) {
        state.withLock { policy in carryOut(policy.detach(pid: pid), in: policy) }
    }

    /// Whether `pid` may open a capture stream: nil, or the reason it may not.
    public func mayRecord(pid: Int32) -> String? {
        state.withLock { $0.mayRecord(pid: pid) }
    }

    /// Every attached client, in attach order (streams 0: the appliance fills them in).
    public func status() -> [SessionClientStatus] {
        state.withLock { $0.clients.map { SessionClientStatus($0) } }
    }

    /// Gains and notices for `effects`, given the policy after the decision. A client that is
    /// (still) interrupted keeps its silence through duck changes; a client that resumes in
    /// the same batch gets its final level once, from the resume.
    private func carryOut(_ effects: [SessionEffect], in policy: SessionPolicy) {
        let resuming = Set(effects.compactMap { effect -> Int32? in
            if case .resume(let pid, _, _) = effect { pid } else { nil }
        })
        for effect in effects {
            let pid = effect.pid
            let client = policy.client(pid)
            let silenced = client?.isInterrupted == true || resuming.contains(pid)
            switch effect {
            case .interrupt(_, let fadeFrames):
                target.setGain(pid: pid, gain: 0, rampFrames: fadeFrames)
                target.deliver(.interruptionBegan, toClient: pid)
            case .duck(_, let gainDB, let rampFrames):
                if !silenced { target.setGain(pid: pid, gain: Float(SessionPolicy.linearGain(decibels: gainDB)), rampFrames: rampFrames) }
                target.deliver(.duck(gainDB: gainDB, active: true), toClient: pid)
            case .restore(_, let rampFrames):
                if !silenced { target.setGain(pid: pid, gain: 1, rampFrames: rampFrames) }
                target.deliver(.duck(gainDB: 0, active: false), toClient: pid)
            case .resume(_, let shouldResume, let fadeFrames):
                target.setGain(pid: pid, gain: client?.gain ?? 1, rampFrames: fadeFrames)
                target.deliver(.interruptionEnded(shouldResume: shouldResume), toClient: pid)
            }
        }
    }
}
