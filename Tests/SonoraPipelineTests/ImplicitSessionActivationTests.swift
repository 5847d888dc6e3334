import Foundation
import Logging
import SonoraCore
import SonoraHAL
import SonoraTestSupport
@testable import SonoraPipeline
@testable import SonoraToolbox
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A program that plays through the appliance without ever calling `setActive(true)`: the
/// appliance activates its session when the stream opens, and tells the program, whose own
/// `AudioSession` then knows it is active — so an interruption pauses its participants
/// rather than only fading its stream.
@Suite("Implicit activation reaches the program's session", .serialized, .enabled(if: CLIRunner.sonoraBinary != nil, "the sonora binary is not built"))
struct ImplicitSessionActivationTests {
    final class Participant: AudioSessionParticipant, @unchecked Sendable {
        let heard = Mutex<[String]>([])
        func audioSessionInterruptionBegan() { heard.withLock { $0.append("began") } }
        func audioSessionInterruptionEnded(shouldResume: Bool) { heard.withLock { $0.append("ended \(shouldResume)") } }
        func wait(for count: Int) -> [String] {
            for _ in 0..<400 where heard.withLock({ $0.count }) < count { usleep(5000) }
            return heard.withLock { $0 }
        }
    }

    static let roles = [SessionRole(name: "intercom", priority: 30, interrupts: ["media"]), SessionRole(name: "media", priority: 10, mayRecord: false)]

    static func server() throws -> ApplianceSessionServer {
        let policy = SessionPolicy(
            roles: roles, categoryRoles: [.soloAmbient: "media", .playback: "media", .playAndRecord: "intercom"], fadeMilliseconds: 10, sampleRate: 48000)
        let server = try ApplianceSessionServer(
            policy: policy, socketPath: "/tmp/sonora-isa-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock", group: nil,
            maximumStreams: 8, format: ApplianceServerFormat(sampleRate: 48000, periodFrames: 256, periods: 2, outputChannels: 2, inputChannels: 0, device: "null"),
            logger: Logger(label: "test"))
        server.start()
        return server
    }

    @Test("the stream opens, the appliance says session_activated with the category it chose")
    func eventOnTheWire() throws {
        let server = try Self.server()
        defer { server.stop() }
        let connection = try ApplianceConnection.connect(path: server.server.path, name: "radio")
        defer { connection.close() }
        let events = Mutex<[ApplianceEvent]>([])
        connection.onEvent { event in events.withLock { $0.append(event) } }
        let device = try ApplianceDevice(socketPath: server.server.path, configuration: AudioDeviceConfiguration(inputChannels: 0, outputChannels: 2), clientName: "radio")
        try device.start(IOProcedure(IOCycleTarget()))
        defer { device.stop() }
        for _ in 0..<400 where !events.withLock({ $0.contains(.sessionActivated(category: "soloAmbient")) }) { usleep(5000) }
        #expect(events.withLock { $0 }.contains(.sessionActivated(category: "soloAmbient")), "\(events.withLock { $0 })")
    }

    @Test("a session that never called setActive is active once its stream opens, and an intercom pauses its participants, then lets them resume")
    func implicitSessionIsInterrupted() throws {
        let server = try Self.server()
        defer { server.stop() }
        let session = AudioSession(backend: try ApplianceAudioSessionBackend(path: server.server.path, programName: "radio"))
        let participant = Participant()
        session.register(participant)
        #expect(!session.isActive)
        let device = try ApplianceDevice(socketPath: server.server.path, configuration: AudioDeviceConfiguration(inputChannels: 0, outputChannels: 2), clientName: "radio")
        try device.start(IOProcedure(IOCycleTarget()))
        defer { device.stop() }
        for _ in 0..<400 where !session.isActive { usleep(5000) }
        #expect(session.isActive && session.category == .soloAmbient)

        // Another program (the server tells programs apart by pid): an intercom for 0.3 s.
        let doorphone = try CLIRunner(executable: try #require(CLIRunner.sonoraBinary)).run(
            ["session", "activate", "--socket", server.server.path, "--category", "playAndRecord", "--seconds", "0.3", "--name", "doorphone"])
        #expect(doorphone.status == 0, "\(doorphone.stderr)")
        #expect(participant.wait(for: 2) == ["began", "ended true"])
    }

    @Test("a session the program activated itself keeps its own category when its stream opens")
    func explicitSessionIsNotOverridden() throws {
        let server = try Self.server()
        defer { server.stop() }
        let session = AudioSession(backend: try ApplianceAudioSessionBackend(path: server.server.path, programName: "radio"))
        try session.setCategory(.playback)
        try session.setActive(true)
        let device = try ApplianceDevice(socketPath: server.server.path, configuration: AudioDeviceConfiguration(inputChannels: 0, outputChannels: 2), clientName: "radio")
        try device.start(IOProcedure(IOCycleTarget()))
        defer { device.stop() }
        usleep(100_000)
        #expect(session.isActive && session.category == .playback)
        #expect(server.coordinator.status().first { $0.pid == getpid() }?.category == .playback)
    }
}
