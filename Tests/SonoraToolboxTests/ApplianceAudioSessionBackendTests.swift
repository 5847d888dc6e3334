import Foundation
import Logging
import SonoraCore
import SonoraHAL
import SonoraTestSupport
@testable import SonoraToolbox
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The audio session through an appliance: an in-process `ApplianceServer` whose policy is
/// scripted (grant, refuse, start ducked) and whose events the test sends, and a session
/// on `ApplianceAudioSessionBackend` — what `AudioSession.shared` is when `sonora run` serves.
@Suite("AudioSession through the appliance", .serialized)
struct ApplianceAudioSessionBackendTests {
    final class Policy: ApplianceSessionHandler, @unchecked Sendable {
        let requests = Mutex<[(op: String, fields: [String: ApplianceValue])]>([])
        let refuse = Atomic<Bool>(false)
        let startDucked = Atomic<Bool>(false)

        func handle(op: String, fields: [String: ApplianceValue], from client: ApplianceClientInfo) throws(AudioError) -> [String: ApplianceValue] {
            requests.withLock { $0.append((op, fields)) }
            if op == "session_activate" && refuse.load(ordering: .relaxed) {
                throw AudioError(.sessionInsufficientPriority, "pid 4242 (doorphone) holds the audio as role intercom")
            }
            return op == "session_activate" && startDucked.load(ordering: .relaxed) ? ["gainDB": .double(-12)] : [:]
        }
        func clientDetached(_ client: ApplianceClientInfo) {}
        func mayOpenStream(direction: ApplianceStreamDirection, client: ApplianceClientInfo) -> String? { nil }
    }

    final class Heard: @unchecked Sendable {
        let events = Mutex<[AudioSessionEvent]>([])
        func wait(for count: Int) -> [AudioSessionEvent] {
            for _ in 0..<400 where events.withLock({ $0.count }) < count { usleep(5000) }
            return events.withLock { $0 }
        }
    }

    static func server(_ policy: Policy) throws -> ApplianceServer {
        let path = "/tmp/sonora-asb-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let server = try ApplianceServer(
            path: path, format: ApplianceServerFormat(sampleRate: 48000, periodFrames: 256, periods: 2, outputChannels: 2, inputChannels: 0, device: "hw:Speaker"),
            handler: policy, logger: Logger(label: "test"))
        server.start()
        return server
    }

    @Test("activation goes to the appliance with category, options and role; its events arrive in order as the session's")
    func activationAndEvents() throws {
        let policy = Policy()
        let server = try Self.server(policy)
        defer { server.stop() }
        let session = AudioSession(backend: try ApplianceAudioSessionBackend(path: server.path, programName: "radio"))
        let heard = Heard()
        _ = session.addListener { event in heard.events.withLock { $0.append(event) } }
        try session.setCategory(.playback, options: [.duckOthers])
        session.role = "media"
        try session.setActive(true)
        let activate = try #require(policy.requests.withLock { $0.first { $0.op == "session_activate" } })
        #expect(activate.fields["category"] == "playback" && activate.fields["role"] == "media")
        #expect(activate.fields["options"] == .array(["mixWithOthers", "duckOthers"]) || activate.fields["options"] == .array(["duckOthers"]))
        #expect(server.clients.contains { $0.name == "radio" && $0.pid == getpid() })
        // The route the appliance reported at attach reaches the session on its delivery queue.
        for _ in 0..<400 where session.currentRoute.outputs.isEmpty { usleep(5000) }
        #expect(session.currentRoute.outputs.map(\.name) == ["hw:Speaker"])
        server.send(.duck(gainDB: -12, active: true), toClient: getpid())
        server.send(.interruptionBegan, toClient: getpid())
        server.send(.interruptionEnded(shouldResume: true), toClient: getpid())
        server.send(.routeChange(reason: "newDeviceAvailable", outputs: ["hw:Headphones"], inputs: []), toClient: getpid())
        // The route the appliance reported at attach (reason unknown) is not one of these.
        func sent() -> [AudioSessionEvent] {
            heard.events.withLock { $0 }.filter { if case .routeChange(let change) = $0 { change.reason != .unknown } else { true } }
        }
        for _ in 0..<400 where sent().count < 4 { usleep(5000) }
        let events = sent()
        try #require(events.count == 4, "\(events)")
        #expect(Array(events.prefix(3)) == [
            .duck(AudioSessionDuck(gainDB: -12, isActive: true)),
            .interruption(.began),
            .interruption(.ended(shouldResume: true)),
        ])
        if case .routeChange(let change) = events[3] {
            #expect(change.reason == .newDeviceAvailable)
        } else {
            Issue.record("no route change: \(events)")
        }
        #expect(session.currentRoute.outputs.map(\.name) == ["hw:Headphones"])
        try session.setActive(false, options: .notifyOthersOnDeactivation)
        let deactivate = try #require(policy.requests.withLock { $0.first { $0.op == "session_deactivate" } })
        #expect(deactivate.fields["notify_others"] == .bool(true))
    }

    @Test("a refusal is thrown with the appliance's status and names the holder; the session stays inactive")
    func refusal() throws {
        let policy = Policy()
        policy.refuse.store(true, ordering: .relaxed)
        let server = try Self.server(policy)
        defer { server.stop() }
        let session = AudioSession(backend: try ApplianceAudioSessionBackend(path: server.path))
        try session.setCategory(.playback)
        let error = try #require(throws: AudioError.self) { try session.setActive(true) }
        #expect(error.code == .sessionInsufficientPriority)
        #expect(error.message.contains("doorphone"), "\(error.message)")
        #expect(!session.isActive)
    }

    @Test("activated while another session ducks it: told at once; the appliance gone is an interruption and a lost route")
    func startDuckedAndServerGone() throws {
        let policy = Policy()
        policy.startDucked.store(true, ordering: .relaxed)
        let server = try Self.server(policy)
        let session = AudioSession(backend: try ApplianceAudioSessionBackend(path: server.path))
        let heard = Heard()
        _ = session.addListener { event in heard.events.withLock { $0.append(event) } }
        try session.setCategory(.playback)
        try session.setActive(true)
        #expect(heard.wait(for: 2).contains(.duck(AudioSessionDuck(gainDB: -12, isActive: true))))
        server.stop()
        let events = heard.wait(for: 4)
        #expect(events.contains(.interruption(.began)), "\(events)")
        #expect(events.contains { if case .routeChange(let change) = $0 { change.reason == .oldDeviceUnavailable } else { false } }, "\(events)")
        #expect(session.isInterrupted)
    }

    @Test("no appliance: ifRunning gives none, and the process's session stays its own")
    func noAppliance() {
        #expect(ApplianceAudioSessionBackend.ifRunning(path: "/tmp/sonora-no-such-\(getpid()).sock") == nil)
    }
}
