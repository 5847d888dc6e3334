import Foundation
import Logging
import SonoraCore
import SonoraHAL
@testable import SonoraPipeline
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The appliance's session server in process: the policy's decisions about programs that
/// open streams without activating a session first (as a program that only starts a queue).
@Suite("Appliance session server", .serialized)
struct ApplianceSessionServerTests {
    static func server(_ roles: [SessionRole], categories: [SessionCategory: String]) throws -> ApplianceSessionServer {
        let policy = SessionPolicy(roles: roles, categoryRoles: categories, fadeMilliseconds: 30, sampleRate: 48000)
        let server = try ApplianceSessionServer(
            policy: policy, socketPath: "/tmp/sonora-ass-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock", group: nil,
            maximumStreams: 8, format: ApplianceServerFormat(sampleRate: 48000, periodFrames: 256, periods: 2, outputChannels: 2, inputChannels: 2, device: "null"),
            logger: Logger(label: "test"))
        server.start()
        return server
    }

    static let roles = [SessionRole(name: "intercom", priority: 30, interrupts: ["media"]), SessionRole(name: "media", priority: 10, mayRecord: false)]

    @Test("a duplex device with no session activated opens both streams: the appliance activates playAndRecord for it")
    func duplexWidensTheImplicitSession() throws {
        let server = try Self.server(Self.roles, categories: [.soloAmbient: "media", .record: "intercom", .playAndRecord: "intercom"])
        defer { server.stop() }
        let device = try ApplianceDevice(socketPath: server.server.path, configuration: AudioDeviceConfiguration(inputChannels: 1, outputChannels: 1), clientName: "doorphone")
        try device.start(IOProcedure(IOCycleTarget()))
        defer { device.stop() }
        let status = server.coordinator.status().first { $0.pid == getpid() }
        #expect(status?.category == .playAndRecord && status?.role == "intercom" && status?.active == true, "\(String(describing: status))")
        #expect(server.streams.snapshot().map(\.direction).sorted { $0.rawValue < $1.rawValue } == [.capture, .playback])
    }

    @Test("a session the program activated itself is not widened: playback only, then capture is refused with the reason")
    func explicitSessionIsKept() throws {
        let server = try Self.server(Self.roles, categories: [.playback: "media", .playAndRecord: "intercom"])
        defer { server.stop() }
        let connection = try ApplianceConnection.connect(path: server.server.path, name: "radio")
        defer { connection.close() }
        _ = try connection.request("session_activate", ["category": "playback"])
        let device = try ApplianceDevice(socketPath: server.server.path, configuration: AudioDeviceConfiguration(inputChannels: 1, outputChannels: 1), clientName: "radio")
        let error = try #require(throws: AudioError.self) { try device.start(IOProcedure(IOCycleTarget())) }
        #expect(error.message.contains("capture"), "\(error.message)")
        #expect(server.coordinator.status().first { $0.pid == getpid() }?.category == .playback)
    }
}
