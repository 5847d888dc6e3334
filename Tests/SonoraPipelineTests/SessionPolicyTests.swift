import SonoraCore
import SonoraPipeline
import Testing

/// The policy the tests decide with: intercom > chime > alert > assistant > media > logger.
let testSessionPolicy = SessionPolicy(
    roles: [
        SessionRole(name: "intercom", priority: 30, interrupts: ["media", "assistant"], ducks: ["logger"], duckDB: -18, attackMilliseconds: 20, releaseMilliseconds: 200),
        SessionRole(name: "chime", priority: 25, ducks: ["media"], duckDB: -20, attackMilliseconds: 10, releaseMilliseconds: 100, mayRecord: false),
        SessionRole(name: "alert", priority: 20, ducks: ["media"], duckDB: -12, attackMilliseconds: 50, releaseMilliseconds: 300, mayRecord: false),
        SessionRole(name: "assistant", priority: 15),
        SessionRole(name: "media", priority: 10, mayRecord: false),
        SessionRole(name: "logger", priority: 5),
    ],
    categoryRoles: [.ambient: "media", .soloAmbient: "media", .playback: "media", .record: "intercom", .playAndRecord: "intercom"],
    fadeMilliseconds: 30, sampleRate: 48000)

/// At 48 kHz: the 30 ms fade, alert's 50/300 ms ramps, chime's 10/100 ms, the default 50 ms attack.
let fade = 1440, alertAttack = 2400, alertRelease = 14400, chimeAttack = 480, chimeRelease = 4800, defaultAttack = 2400

/// One step of a scenario and what the policy must answer.
struct PolicyStep: Sendable, CustomStringConvertible {
    enum Action: Sendable {
        case activate(Int32, SessionCategory, SessionOptions = [], role: String? = nil)
        case deactivate(Int32, notifyOthers: Bool = true)
        case detach(Int32)
    }
    enum Expected: Sendable {
        case effects([SessionEffect])
        case refused(AudioError.Code, holder: Int32?, mentioning: [String])
    }
    var action: Action
    var expected: Expected
    var description: String { "\(action)" }

    init(_ action: Action, _ expected: Expected) {
        self.action = action
        self.expected = expected
    }
}

struct PolicyScenario: Sendable, CustomTestStringConvertible {
    var name: String
    var steps: [PolicyStep]
    var testDescription: String { name }
}

let policyScenarios: [PolicyScenario] = [
    PolicyScenario(name: "media, then intercom: media interrupted with the fade in frames", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(2, .playAndRecord), .effects([.interrupt(pid: 1, fadeFrames: fade)])),
    ]),
    PolicyScenario(name: "intercom ends with notifyOthers: media resumes, should resume", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(2, .playAndRecord), .effects([.interrupt(pid: 1, fadeFrames: fade)])),
        PolicyStep(.deactivate(2, notifyOthers: true), .effects([.resume(pid: 1, shouldResume: true, fadeFrames: fade)])),
    ]),
    PolicyScenario(name: "intercom ends without notifyOthers: media resumes, should not resume", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(2, .playAndRecord), .effects([.interrupt(pid: 1, fadeFrames: fade)])),
        PolicyStep(.deactivate(2, notifyOthers: false), .effects([.resume(pid: 1, shouldResume: false, fadeFrames: fade)])),
    ]),
    PolicyScenario(name: "alert ducks media by duck_db with its attack, restores with its release", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(3, .playback, role: "alert"), .effects([.duck(pid: 1, gainDB: -12, rampFrames: alertAttack)])),
        PolicyStep(.deactivate(3), .effects([.restore(pid: 1, rampFrames: alertRelease)])),
    ]),
    PolicyScenario(name: "a deeper duck over a shallower one, back to the shallower with the deeper one's release", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(3, .playback, role: "alert"), .effects([.duck(pid: 1, gainDB: -12, rampFrames: alertAttack)])),
        PolicyStep(.activate(8, .playback, role: "chime"), .effects([.duck(pid: 1, gainDB: -20, rampFrames: chimeAttack)])),
        PolicyStep(.deactivate(8), .effects([.duck(pid: 1, gainDB: -12, rampFrames: chimeRelease)])),
        PolicyStep(.deactivate(3), .effects([.restore(pid: 1, rampFrames: alertRelease)])),
    ]),
    PolicyScenario(name: "a shallower duck under a deeper one changes nothing until the deeper one ends", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(8, .playback, role: "chime"), .effects([.duck(pid: 1, gainDB: -20, rampFrames: chimeAttack)])),
        PolicyStep(.activate(3, .playback, role: "alert"), .effects([])),
        PolicyStep(.deactivate(8), .effects([.duck(pid: 1, gainDB: -12, rampFrames: chimeRelease)])),
    ]),
    PolicyScenario(name: "a session activating while a ducker is active starts ducked", steps: [
        PolicyStep(.activate(3, .playback, role: "alert"), .effects([])),
        PolicyStep(.activate(1, .playback), .effects([.duck(pid: 1, gainDB: -12, rampFrames: alertAttack)])),
    ]),
    PolicyScenario(name: "ambient media is not interrupted by the intercom", steps: [
        PolicyStep(.activate(1, .ambient), .effects([])),
        PolicyStep(.activate(2, .playAndRecord), .effects([])),
    ]),
    PolicyScenario(name: "ambient media activates beside an active intercom", steps: [
        PolicyStep(.activate(2, .playAndRecord), .effects([])),
        PolicyStep(.activate(1, .ambient), .effects([])),
    ]),
    PolicyScenario(name: "an ambient intercom interrupts no one", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(2, .ambient, role: "intercom"), .effects([])),
    ]),
    PolicyScenario(name: "mixWithOthers: an intercom that mixes interrupts no one", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(2, .playAndRecord, .mixWithOthers), .effects([])),
    ]),
    PolicyScenario(name: "mixWithOthers: media that mixes is not interrupted", steps: [
        PolicyStep(.activate(1, .playback, .mixWithOthers), .effects([])),
        PolicyStep(.activate(2, .playAndRecord), .effects([])),
    ]),
    PolicyScenario(name: "duckOthers ducks every other session of no higher priority, by its role's depth", steps: [
        PolicyStep(.activate(2, .playAndRecord, .mixWithOthers), .effects([])),
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(4, .playback, .duckOthers), .effects([.duck(pid: 1, gainDB: SessionRole.defaultDuckDB, rampFrames: defaultAttack)])),
        PolicyStep(.deactivate(4), .effects([.restore(pid: 1, rampFrames: 14400)])),
    ]),
    PolicyScenario(name: "activation refused while a higher-priority session that interrupts its role holds the audio", steps: [
        PolicyStep(.activate(2, .playAndRecord), .effects([])),
        PolicyStep(.activate(1, .playback), .refused(.sessionInsufficientPriority, holder: 2, mentioning: ["pid 2", "(doorphone)", "role intercom (priority 30)", "interrupts role media"])),
        // The refusal changed nothing: the intercom ends with nothing to resume.
        PolicyStep(.deactivate(2), .effects([])),
    ]),
    PolicyScenario(name: "activation refused while a higher-priority session holds the input", steps: [
        PolicyStep(.activate(2, .playAndRecord), .effects([])),
        PolicyStep(.activate(7, .record, role: "logger"), .refused(.sessionInsufficientPriority, holder: 2, mentioning: ["pid 2", "takes the input", "logger"])),
    ]),
    PolicyScenario(name: "record refused when the role may not record", steps: [
        PolicyStep(.activate(1, .record, role: "media"), .refused(.sessionCannotStartRecording, holder: nil, mentioning: ["role media may not record", "may_record: false"])),
        PolicyStep(.activate(3, .playAndRecord, role: "alert"), .refused(.sessionCannotStartRecording, holder: nil, mentioning: ["role alert"])),
    ]),
    PolicyScenario(name: "options the category does not take are refused", steps: [
        PolicyStep(.activate(1, .ambient, .duckOthers), .refused(.sessionIncompatibleCategory, holder: nil, mentioning: ["duckOthers", "ambient", "takes none"])),
        PolicyStep(.activate(1, .playback, .defaultToSpeaker), .refused(.sessionIncompatibleCategory, holder: nil, mentioning: ["defaultToSpeaker", "mixWithOthers, duckOthers"])),
    ]),
    PolicyScenario(name: "an unknown role is refused with the roles there are", steps: [
        PolicyStep(.activate(1, .playback, role: "medai"), .refused(.parameterError, holder: nil, mentioning: ["unknown role 'medai'", "did you mean 'media'"])),
    ]),
    PolicyScenario(name: "a client that never attached is refused", steps: [
        PolicyStep(.activate(99, .playback), .refused(.sessionNotInitialized, holder: nil, mentioning: ["pid 99"])),
    ]),
    PolicyScenario(name: "detach of an interrupter resumes the others, told they may resume", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(2, .playAndRecord), .effects([.interrupt(pid: 1, fadeFrames: fade)])),
        PolicyStep(.detach(2), .effects([.resume(pid: 1, shouldResume: true, fadeFrames: fade)])),
    ]),
    PolicyScenario(name: "detach of a ducker restores the others", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(3, .playback, role: "alert"), .effects([.duck(pid: 1, gainDB: -12, rampFrames: alertAttack)])),
        PolicyStep(.detach(3), .effects([.restore(pid: 1, rampFrames: alertRelease)])),
    ]),
    PolicyScenario(name: "two interrupters stacked: media resumes only after both end", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(2, .playAndRecord), .effects([.interrupt(pid: 1, fadeFrames: fade)])),
        PolicyStep(.activate(5, .playAndRecord), .effects([])),
        PolicyStep(.deactivate(2), .effects([])),
        PolicyStep(.deactivate(5), .effects([.resume(pid: 1, shouldResume: true, fadeFrames: fade)])),
    ]),
    PolicyScenario(name: "stacked interrupters ending in the other order", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(2, .playAndRecord), .effects([.interrupt(pid: 1, fadeFrames: fade)])),
        PolicyStep(.activate(5, .playAndRecord), .effects([])),
        PolicyStep(.detach(5), .effects([])),
        PolicyStep(.deactivate(2, notifyOthers: false), .effects([.resume(pid: 1, shouldResume: false, fadeFrames: fade)])),
    ]),
    PolicyScenario(name: "an interrupted session that deactivates itself is still told when the interruption ends", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(2, .playAndRecord), .effects([.interrupt(pid: 1, fadeFrames: fade)])),
        PolicyStep(.deactivate(1), .effects([])),
        PolicyStep(.deactivate(2), .effects([.resume(pid: 1, shouldResume: true, fadeFrames: fade)])),
    ]),
    PolicyScenario(name: "an interrupted session cannot activate again while the interrupter holds the audio", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(2, .playAndRecord), .effects([.interrupt(pid: 1, fadeFrames: fade)])),
        PolicyStep(.activate(1, .playback), .refused(.sessionInsufficientPriority, holder: 2, mentioning: ["pid 2"])),
        PolicyStep(.deactivate(2), .effects([.resume(pid: 1, shouldResume: true, fadeFrames: fade)])),
    ]),
    PolicyScenario(name: "a detached interrupted client is forgotten", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(2, .playAndRecord), .effects([.interrupt(pid: 1, fadeFrames: fade)])),
        PolicyStep(.detach(1), .effects([])),
        PolicyStep(.deactivate(2), .effects([])),
    ]),
    PolicyScenario(name: "re-activation with the same category, options and role is idempotent", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(3, .playback, role: "alert"), .effects([.duck(pid: 1, gainDB: -12, rampFrames: alertAttack)])),
        PolicyStep(.activate(3, .playback, role: "alert"), .effects([])),
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(2, .playAndRecord), .effects([.interrupt(pid: 1, fadeFrames: fade)])),
        PolicyStep(.activate(2, .playAndRecord), .effects([])),
    ]),
    PolicyScenario(name: "re-activation as another role undoes the old one first", steps: [
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(3, .playback, role: "alert"), .effects([.duck(pid: 1, gainDB: -12, rampFrames: alertAttack)])),
        PolicyStep(.activate(3, .playAndRecord, role: "intercom"), .effects([.restore(pid: 1, rampFrames: alertRelease), .interrupt(pid: 1, fadeFrames: fade)])),
    ]),
    PolicyScenario(name: "deactivating an inactive session does nothing", steps: [
        PolicyStep(.deactivate(1), .effects([])),
        PolicyStep(.detach(1), .effects([])),
    ]),
    PolicyScenario(name: "interrupts come before ducks in one activation", steps: [
        PolicyStep(.activate(7, .playback, role: "logger"), .effects([])),
        PolicyStep(.activate(1, .playback), .effects([])),
        PolicyStep(.activate(2, .playAndRecord), .effects([.interrupt(pid: 1, fadeFrames: fade), .duck(pid: 7, gainDB: -18, rampFrames: 960)])),
        PolicyStep(.deactivate(2), .effects([.restore(pid: 7, rampFrames: 9600), .resume(pid: 1, shouldResume: true, fadeFrames: fade)])),
    ]),
]

@Suite("SessionPolicy: who interrupts, ducks and resumes whom")
struct SessionPolicyTests {
    static func attached() -> SessionPolicy {
        var policy = testSessionPolicy
        for (pid, name) in [(1, "player"), (2, "doorphone"), (3, "chime-alert"), (4, "podcast"), (5, "doorphone-2"), (6, "assistant"), (7, "logger"), (8, "chime")] {
            policy.attach(pid: Int32(pid), name: name)
        }
        return policy
    }

    @Test("decisions", arguments: policyScenarios)
    func scenario(_ scenario: PolicyScenario) {
        var policy = Self.attached()
        for (number, step) in scenario.steps.enumerated() {
            let label = Comment(rawValue: "step \(number + 1): \(step)")
            let decision: SessionDecision
            switch step.action {
            case .activate(let pid, let category, let options, let role):
                decision = policy.activate(pid: pid, category: category, options: options, role: role)
            case .deactivate(let pid, let notify):
                decision = .granted(policy.deactivate(pid: pid, notifyOthers: notify))
            case .detach(let pid):
                decision = .granted(policy.detach(pid: pid))
            }
            switch (step.expected, decision) {
            case (.effects(let expected), .granted(let effects)):
                #expect(effects == expected, label)
            case (.refused(let code, let holder, let words), .refused(let refusal)):
                #expect(refusal.code == code, label)
                #expect(refusal.holder?.pid == holder, label)
                for word in words { #expect(refusal.reason.contains(word), "\(label): \(refusal.reason)") }
                #expect(refusal.error.code == code && refusal.error.message == refusal.reason, label)
            default:
                Issue.record("\(label): got \(decision)")
            }
        }
    }

    @Test("a refusal changes nothing")
    func refusalLeavesState() {
        var policy = Self.attached()
        _ = policy.activate(pid: 2, category: .playAndRecord, options: [], role: nil)
        let before = policy
        #expect(policy.activate(pid: 1, category: .playback, options: [], role: nil) != .granted([]))
        #expect(policy == before)
    }

    @Test("the holder in a refusal names pid, program and role")
    func holder() throws {
        var policy = Self.attached()
        _ = policy.activate(pid: 2, category: .playAndRecord, options: [], role: nil)
        guard case .refused(let refusal) = policy.activate(pid: 1, category: .soloAmbient, options: [], role: nil) else {
            Issue.record("granted")
            return
        }
        #expect(refusal.holder == SessionHolder(pid: 2, name: "doorphone", role: "intercom"))
        #expect(refusal.code.rawValue == 0x2170_7269)  // '!pri'
    }

    @Test("the state a decision leaves: role from the category, duckOthers brings mixWithOthers, interrupted and ducked")
    func clientState() throws {
        var policy = Self.attached()
        _ = policy.activate(pid: 1, category: .playback, options: [], role: nil)
        _ = policy.activate(pid: 3, category: .playback, options: [], role: "alert")
        _ = policy.activate(pid: 2, category: .playAndRecord, options: [], role: nil)
        _ = policy.activate(pid: 4, category: .playback, options: .duckOthers, role: "assistant")
        let media = try #require(policy.client(1))
        #expect(media.role == "media" && media.active && media.isInterrupted && media.interruptedBy == [2])
        #expect(media.duckDB == -12 && media.gain == 0)
        let podcast = try #require(policy.client(4))
        #expect(podcast.options == [.duckOthers, .mixWithOthers] && podcast.isMixable)
        #expect(policy.client(3)?.duckDB == nil)  // alert (20) outranks the assistant (15): its duckOthers leaves it
    }

    @Test("who may record")
    func mayRecord() {
        var policy = Self.attached()
        #expect(policy.mayRecord(pid: 1) == nil)  // no session: records as `record` → intercom, which may
        _ = policy.activate(pid: 1, category: .playback, options: [], role: nil)
        #expect(policy.mayRecord(pid: 1)?.contains("category is playback, which does not record") == true)
        _ = policy.activate(pid: 2, category: .playAndRecord, options: [], role: nil)
        #expect(policy.mayRecord(pid: 2) == nil)
        #expect(policy.mayRecord(pid: 7) == nil)  // without a session it records as an intercom, as high as the holder
        var lower = policy
        lower.categoryRoles[.record] = "logger"
        #expect(lower.mayRecord(pid: 7)?.contains("pid 2 (doorphone) holds the audio as role intercom (priority 30) and takes the input") == true)
        #expect(policy.mayRecord(pid: 42)?.contains("has not attached") == true)
        var strict = testSessionPolicy
        strict.categoryRoles[.record] = "media"
        strict.attach(pid: 1, name: "recorder")
        #expect(strict.mayRecord(pid: 1)?.contains("may_record: false") == true)
    }

    @Test("ramps are frames at the sample rate")
    func frames() {
        var policy = testSessionPolicy
        policy.sampleRate = 44100
        #expect(policy.frames(milliseconds: 30) == 1323)
        #expect(policy.frames(milliseconds: 300) == 13230)
        policy.sampleRate = 48000
        #expect(policy.frames(milliseconds: 0) == 0)
    }
}
