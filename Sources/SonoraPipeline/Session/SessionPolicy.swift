import Foundation
import SonoraCore

/// The appliance's session rules and the sessions they apply to, as a value: activations,
/// deactivations and departures in, decisions and effects out. No sockets, no threads, no
/// clock — `SessionCoordinator` carries the effects out.
///
/// The rules (SESSION.md, after the reference documents' Tables 7-1/7-2 and AVAudioSession):
/// - An activation is refused when an active session of higher priority is not mixable and
///   its role interrupts the (non-mixable) requester's, or holds the input the requester also
///   wants; and when the requester wants the input but its role may not record.
/// - A granted non-mixable session interrupts (fades out, tells) every active non-mixable
///   session whose role its role interrupts; ambient and mixWithOthers sessions interrupt no one.
/// - It ducks the sessions of the roles its role ducks, and with duckOthers every other
///   session of no higher priority; the deepest duck applies. It is itself ducked by the
///   active sessions that duck its role.
/// - When it deactivates (or its client detaches) what it ducked is restored, and what it
///   interrupted resumes once nothing else interrupts it.
public struct SessionPolicy: Sendable, Equatable {
    public var roles: [SessionRole]
    /// The role of a session that names none, by its category.
    public var categoryRoles: [SessionCategory: String]
    /// Fade-out on interruption, fade-in on resume.
    public var fadeMilliseconds: Int
    /// The appliance's rate: ramps are given in its frames.
    public var sampleRate: Int
    /// Attached clients, in attach order.
    public private(set) var clients: [SessionClient] = []

    public static let defaultFadeMilliseconds = 30
    public static let fadeRange = 0...2000

    public init(
        roles: [SessionRole] = [], categoryRoles: [SessionCategory: String] = [:],
        fadeMilliseconds: Int = SessionPolicy.defaultFadeMilliseconds, sampleRate: Int = 48000
    ) {
        self.roles = roles
        self.categoryRoles = categoryRoles
        self.fadeMilliseconds = fadeMilliseconds
        self.sampleRate = sampleRate
    }

    /// The policy a config's `session:` section describes.
    public init(_ session: PipelineConfiguration.Session, sampleRate: Int) {
        self.init(roles: session.roles, categoryRoles: session.categoryRoles, fadeMilliseconds: session.fadeMilliseconds, sampleRate: sampleRate)
    }

    public func role(named name: String) -> SessionRole? { roles.first { $0.name == name } }

    public func client(_ pid: Int32) -> SessionClient? { clients.first { $0.pid == pid } }

    /// `milliseconds` in frames at `sampleRate`, rounded.
    public func frames(milliseconds: Int) -> Int { (milliseconds * sampleRate + 500) / 1000 }

    static func linearGain(decibels: Double) -> Double { pow(10, decibels / 20) }

    /// A client connected (a second attach of the same pid renames it).
    public mutating func attach(pid: Int32, name: String) {
        if let index = index(of: pid) { clients[index].name = name } else { clients.append(SessionClient(pid: pid, name: name)) }
    }

    /// Activates `pid`'s session. Activating again with the same category, options and role
    /// changes nothing; with others, the old activation is undone and the new one applied.
    public mutating func activate(pid: Int32, category: SessionCategory, options requested: SessionOptions, role requestedRole: String?) -> SessionDecision {
        guard let index = index(of: pid) else {
            return .refused(SessionRefusal(code: .sessionNotInitialized, reason: "pid \(pid) has not attached; a client says hello before it activates a session"))
        }
        let extra = requested.subtracting(category.allowedOptions)
        guard extra.isEmpty else {
            let takes = category.allowedOptions.isEmpty ? "it takes none" : "it takes \(category.allowedOptions.names.joined(separator: ", "))"
            return .refused(SessionRefusal(
                code: .sessionIncompatibleCategory,
                reason: "option \(extra.names.joined(separator: ", ")) does not go with category \(category.rawValue) (\(takes))"))
        }
        var options = requested
        if options.contains(.duckOthers) { options.insert(.mixWithOthers) }  // as AVAudioSession: ducking implies mixing
        let roleName: String?
        if let requestedRole {
            guard role(named: requestedRole) != nil else {
                let known = roles.isEmpty ? "the policy has no roles" : "roles: \(roles.map(\.name).joined(separator: ", "))"
                return .refused(SessionRefusal(code: .parameterError, reason: "unknown role '\(Diagnostic.excerpt(requestedRole))'\(suggestion(for: requestedRole, in: roles.map(\.name))) (\(known))"))
            }
            roleName = requestedRole
        } else {
            roleName = categoryRoles[category]
        }
        let current = clients[index]
        if current.active, !current.isInterrupted, current.category == category, current.options == options, current.role == roleName {
            return .granted([])
        }

        // Decided on a copy: a refusal leaves everything as it was.
        var candidate = self
        var effects = current.active ? candidate.deactivate(pid: pid, notifyOthers: true) : []
        var session = candidate.clients[index]
        session.role = roleName
        session.category = category
        session.options = options
        if let refusal = candidate.refusal(for: session) { return .refused(refusal) }
        session.active = true
        candidate.clients[index] = session
        effects += candidate.applyActivation(of: index)
        self = candidate
        return .granted(effects)
    }

    /// Deactivates `pid`'s session: what it ducked is restored, what it interrupted resumes
    /// (told `shouldResume: notifyOthers`) once nothing else interrupts it. Inactive: no effect.
    public mutating func deactivate(pid: Int32, notifyOthers: Bool) -> [SessionEffect] {
        guard let index = index(of: pid), clients[index].active else { return [] }
        clients[index].active = false
        let release = frames(milliseconds: clients[index].role.flatMap(role(named:))?.releaseMilliseconds ?? SessionRole.defaultReleaseMilliseconds)
        var restores: [SessionEffect] = []
        var resumes: [SessionEffect] = []
        for other in clients.indices where other != index {
            if let depth = clients[other].duckedBy.removeValue(forKey: pid) {
                let before = min(depth, clients[other].duckDB ?? depth)
                if let after = clients[other].duckDB {
                    if after != before { restores.append(.duck(pid: clients[other].pid, gainDB: after, rampFrames: release)) }
                } else {
                    restores.append(.restore(pid: clients[other].pid, rampFrames: release))
                }
            }
            if let position = clients[other].interruptedBy.firstIndex(of: pid) {
                clients[other].interruptedBy.remove(at: position)
                if !clients[other].isInterrupted {
                    resumes.append(.resume(pid: clients[other].pid, shouldResume: notifyOthers, fadeFrames: frames(milliseconds: fadeMilliseconds)))
                }
            }
        }
        return restores + resumes
    }

    /// The client went away (closed or died): its session ends as a deactivation that tells
    /// the others they may resume, and it is forgotten.
    public mutating func detach(pid: Int32) -> [SessionEffect] {
        let effects = deactivate(pid: pid, notifyOthers: true)
        clients.removeAll { $0.pid == pid }
        return effects
    }

    /// Whether `pid` may take the input now (open a capture stream): nil, or why not.
    public func mayRecord(pid: Int32) -> String? {
        guard let client = client(pid) else { return "pid \(pid) has not attached" }
        var session = client
        if !client.active {
            // No session of its own: it records as a record session would.
            session.category = .record
            session.options = []
            session.role = categoryRoles[.record]
        } else if let category = client.category, !category.usesInput {
            return "the session's category is \(category.rawValue), which does not record; activate it as record or playAndRecord"
        }
        return refusal(for: session)?.reason
    }

    // MARK: - Rules

    func priority(of roleName: String?) -> Int { roleName.flatMap(role(named:))?.priority ?? -1 }

    /// Why `session` (about to become active, not yet marked so) may not, or nil.
    func refusal(for session: SessionClient) -> SessionRefusal? {
        let wantsInput = session.category?.usesInput == true
        if wantsInput, let name = session.role, let role = role(named: name), !role.mayRecord {
            return SessionRefusal(code: .sessionCannotStartRecording, reason: "role \(name) may not record (may_record: false); category \(session.category!.rawValue) takes the input")
        }
        let priority = priority(of: session.role)
        for holder in clients where holder.pid != session.pid && holder.active && !holder.isMixable {
            guard let holderRole = holder.role.flatMap(role(named:)), holderRole.priority > priority else { continue }
            let who = "pid \(holder.pid) (\(Diagnostic.excerpt(holder.name))) holds the audio as role \(holderRole.name) (priority \(holderRole.priority))"
            if !session.isMixable, let name = session.role, holderRole.interrupts.contains(name) {
                return SessionRefusal(
                    code: .sessionInsufficientPriority,
                    reason: "activation refused: \(who), which interrupts role \(name) (priority \(priority))", holder: holder.holder)
            }
            if wantsInput, holder.category?.usesInput == true {
                return SessionRefusal(
                    code: .sessionInsufficientPriority,
                    reason: "activation refused: \(who) and takes the input in category \(holder.category!.rawValue); role \(session.role ?? "(none)") (priority \(priority)) cannot share it",
                    holder: holder.holder)
            }
        }
        return nil
    }

    /// Whether `ducker` (active) lowers `target`: its role ducks the target's, or it has duckOthers and the target is of no higher priority.
    func ducks(_ ducker: SessionClient, _ target: SessionClient) -> Bool {
        if let name = target.role, let role = ducker.role.flatMap(role(named:)), role.ducks.contains(name) { return true }
        return ducker.options.contains(.duckOthers) && priority(of: target.role) <= priority(of: ducker.role)
    }

    /// Applies the effects of the now-active session at `index` to the others and to itself.
    mutating func applyActivation(of index: Int) -> [SessionEffect] {
        let session = clients[index]
        let role = session.role.flatMap(role(named:))
        var interrupts: [SessionEffect] = []
        var lowered: [SessionEffect] = []
        for other in clients.indices where other != index && clients[other].active {
            let target = clients[other]
            if !session.isMixable, let role, let name = target.role, role.interrupts.contains(name), !target.isMixable, !target.interruptedBy.contains(session.pid) {
                if !target.isInterrupted { interrupts.append(.interrupt(pid: target.pid, fadeFrames: frames(milliseconds: fadeMilliseconds))) }
                clients[other].interruptedBy.append(session.pid)
            }
            if ducks(session, target) {
                lowered += duck(other, by: session.pid, depth: role?.duckDB ?? SessionRole.defaultDuckDB,
                              attackMilliseconds: role?.attackMilliseconds ?? SessionRole.defaultAttackMilliseconds)
            }
        }
        // Sessions already active that duck this one lower it from the start.
        for other in clients.indices where other != index && clients[other].active && ducks(clients[other], session) {
            let ducker = clients[other].role.flatMap(self.role(named:))
            lowered += duck(index, by: clients[other].pid, depth: ducker?.duckDB ?? SessionRole.defaultDuckDB,
                          attackMilliseconds: ducker?.attackMilliseconds ?? SessionRole.defaultAttackMilliseconds)
        }
        return interrupts + lowered
    }

    /// Records a duck of the client at `index`; the effect when the level it gets changes.
    mutating func duck(_ index: Int, by ducker: Int32, depth: Double, attackMilliseconds: Int) -> [SessionEffect] {
        let before = clients[index].duckDB
        clients[index].duckedBy[ducker] = depth
        guard let after = clients[index].duckDB, after != before else { return [] }
        return [.duck(pid: clients[index].pid, gainDB: after, rampFrames: frames(milliseconds: attackMilliseconds))]
    }

    func index(of pid: Int32) -> Int? { clients.firstIndex { $0.pid == pid } }
}
