@testable import SonoraHAL
import Foundation
import SonoraCore
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The appliance's wire protocol: every bad request gets an error reply that names what is
/// wrong; the socket is private; device names for the client driver.
@Suite("Appliance protocol", .serialized)
struct ApplianceProtocolTests {
    @Test("the server socket is created mode 0600 and isApplianceRunning sees it")
    func socketMode() throws {
        let rig = try ApplianceTestRig()
        var info = stat()
        #expect(lstat(rig.path, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFSOCK)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(isApplianceRunning(path: rig.path))
        rig.stop()
        #expect(!isApplianceRunning(path: rig.path))
        #expect(lstat(rig.path, &info) != 0)  // removed on stop
    }

    @Test("with a group the socket is 0660 and owned by that group")
    func groupMode() throws {
        let folder = try TemporaryFolder(prefix: "sonora-appliance", in: "/tmp")
        let path = folder.path("server.sock")
        let server = try ApplianceServer(path: path, group: getgid(), format: ApplianceTestRig.format, handler: RecordingSessionHandler(), logger: .init(label: "t"))
        var info = stat()
        #expect(lstat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o660)
        #expect(info.st_gid == getgid())
        server.stop()
    }

    @Test("a missing folder is made: 0700 alone, 0750 and the group's with a group (as /run/sonora before the service ran)")
    func makesTheFolder() throws {
        let folder = try TemporaryFolder(prefix: "sonora-appliance", in: "/tmp")
        for group in [nil, getgid()] as [gid_t?] {
            let runtime = folder.path(group == nil ? "alone" : "shared")
            let server = try ApplianceServer(path: runtime + "/server.sock", group: group, format: ApplianceTestRig.format, handler: RecordingSessionHandler(), logger: .init(label: "t"))
            var info = stat()
            #expect(stat(runtime, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR)
            #expect(info.st_mode & 0o777 == (group == nil ? 0o700 : 0o750))
            if let group { #expect(info.st_gid == group) }
            #expect(isApplianceRunning(path: runtime + "/server.sock"))
            server.stop()
        }
    }

    @Test("a folder that cannot be made is an error naming it")
    func folderThatCannotBeMade() throws {
        let folder = try TemporaryFolder(prefix: "sonora-appliance", in: "/tmp")
        #expect(creat(folder.path("file"), 0o600) >= 0)
        let runtime = folder.path("file") + "/sonora"
        #expect {
            try ApplianceServer(path: runtime + "/server.sock", format: ApplianceTestRig.format, handler: RecordingSessionHandler(), logger: .init(label: "t"))
        } throws: { error in
            "\(error)".contains("cannot make the folder \(runtime)")
        }
    }

    @Test("a file that is not a socket is never replaced")
    func refusesToReplaceFile() throws {
        let folder = try TemporaryFolder(prefix: "sonora-appliance", in: "/tmp")
        let path = folder.path("server.sock")
        #expect(creat(path, 0o600) >= 0)
        #expect(throws: AudioError.self) {
            try ApplianceServer(path: path, format: ApplianceTestRig.format, handler: RecordingSessionHandler(), logger: .init(label: "t"))
        }
        var info = stat()
        #expect(lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
    }

    @Test("hello answers with the server's format")
    func hello() throws {
        let rig = try ApplianceTestRig()
        let client = try RawApplianceClient(path: rig.path)
        let reply = try #require(client.ask(#"{"id":7,"op":"hello","name":"raw"}"#))
        let fields = try ApplianceJSON.parseObject(Array(reply.utf8))
        #expect(fields["id"] == 7 && fields["ok"] == true && fields["server"] == "sonora" && fields["version"] == 1)
        #expect(fields["sample_rate"] == .int(ApplianceTestRig.sampleRate) && fields["period"] == .int(ApplianceTestRig.period))
        #expect(fields["output_channels"] == 2 && fields["input_channels"] == 1 && fields["device"] == "null")
        #expect(ApplianceTestRig.eventually { rig.server.clients.contains { $0.name == "raw" && $0.pid == getpid() } })
    }

    /// Sends `line` after hello and returns the error text (nil when the reply is not an error).
    private func error(of line: String, rig: ApplianceTestRig) throws -> String? {
        let client = try RawApplianceClient(path: rig.path)
        _ = client.ask(#"{"id":1,"op":"hello","name":"raw"}"#)
        let reply = try #require(client.ask(line))
        let fields = try ApplianceJSON.parseObject(Array(reply.utf8))
        guard fields["ok"] == false, fields["status"]?.intValue != nil else { return nil }
        return fields["error"]?.stringValue
    }

    @Test("bad requests get an error reply naming what is wrong", arguments: [
        (#"{"id":2,"op":"open_stream","direction":"playback""#, "malformed JSON"),
        (#"[1,2]"#, "one JSON object per line"),
        (#"{"id":2,"op":"fly"}"#, "unknown op 'fly'"),
        (#"{"id":2}"#, "missing field 'op'"),
        (#"{"op":"session_status"}"#, "\"id\""),
        (#"{"id":2,"op":"open_stream","direction":"playback"}"#, "missing field 'channels'"),
        (#"{"id":2,"op":"open_stream","channels":2}"#, "missing field 'direction'"),
        (#"{"id":2,"op":"open_stream","direction":"sideways","channels":2}"#, "direction 'sideways'"),
        (#"{"id":2,"op":"open_stream","direction":"playback","channels":0}"#, "channels 0 out of 1…64"),
        (#"{"id":2,"op":"open_stream","direction":"playback","channels":65}"#, "channels 65 out of 1…64"),
        (#"{"id":2,"op":"open_stream","direction":"playback","channels":"two"}"#, "field 'channels' must be an integer"),
        (#"{"id":2,"op":"close_stream","stream":99}"#, "no stream 99"),
    ])
    func badRequests(line: String, expected: String) throws {
        let rig = try ApplianceTestRig()
        let message = try error(of: line, rig: rig)
        #expect(message?.contains(expected) == true, "\(line) → \(message ?? "no error")")
    }

    @Test("a client beyond the limit gets an error line and is closed")
    func tooManyClients() throws {
        let rig = try ApplianceTestRig(limits: ApplianceServerLimits(maximumClients: 1))
        let first = try RawApplianceClient(path: rig.path)
        #expect(first.ask(#"{"id":1,"op":"hello","name":"first"}"#)?.contains("\"ok\":true") == true)
        let second = try RawApplianceClient(path: rig.path)
        #expect(second.line()?.contains("at most 1 clients") == true)
        #expect(second.line() == nil)
        #expect(first.ask(#"{"id":2,"op":"session_status"}"#)?.contains("\"ok\":true") == true)
    }

    @Test("a server that is not a Sonora appliance is refused at hello")
    func foreignServer() throws {
        let folder = try TemporaryFolder(prefix: "sonora-appliance", in: "/tmp")
        let path = folder.path("other.sock")
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        listen(listener, 4)
        defer { close(listener) }
        let answering = Thread {
            let client = accept(listener, nil, nil)
            var request = [UInt8](repeating: 0, count: 4096)
            _ = recv(client, &request, request.count, 0)
            let answer = Array(#"{"id":1,"ok":true,"server":"pipewire"}"#.utf8) + [10]
            _ = answer.withUnsafeBytes { send(client, $0.baseAddress, $0.count, 0) }
            usleep(200_000)
            close(client)
        }
        answering.start()
        #expect {
            try ApplianceConnection.connect(path: path, name: "x")
        } throws: { error in
            (error as? AudioError)?.message.contains("did not answer hello as a Sonora appliance") == true
        }
    }

    @Test("the first request must be hello")
    func helloFirst() throws {
        let rig = try ApplianceTestRig()
        let client = try RawApplianceClient(path: rig.path)
        let reply = try #require(client.ask(#"{"id":1,"op":"open_stream","direction":"playback","channels":1}"#))
        #expect(reply.contains("the first request must be hello"))
        #expect(rig.server.streams.snapshot().isEmpty)
    }

    @Test("a line over 64 KiB gets an error, then the connection is closed")
    func oversizeLine() throws {
        let rig = try ApplianceTestRig()
        let client = try RawApplianceClient(path: rig.path)
        _ = client.ask(#"{"id":1,"op":"hello","name":"raw"}"#)
        client.send(#"{"id":2,"op":"hello","name":""# + String(repeating: "a", count: 70 * 1024) + "\"}\n")
        let reply = try #require(client.line())
        #expect(reply.contains("longer than 65536 bytes"))
        #expect(client.line() == nil)  // closed
        // The server still serves others.
        #expect(try error(of: #"{"id":2,"op":"fly"}"#, rig: rig)?.contains("unknown op") == true)
    }

    @Test("too many streams is refused with a reason, as capture the policy forbids")
    func refusals() throws {
        let rig = try ApplianceTestRig(limits: ApplianceServerLimits(maximumStreams: 2), handler: RecordingSessionHandler(refusesCapture: true))
        let connection = try ApplianceConnection.connect(path: rig.path, name: "greedy")
        _ = try connection.request("open_stream", ["direction": "playback", "channels": 1])
        _ = try connection.request("open_stream", ["direction": "playback", "channels": 2])
        #expect {
            try connection.request("open_stream", ["direction": "playback", "channels": 1])
        } throws: { error in
            (error as? AudioError)?.message.contains("too many streams") == true
        }
        #expect {
            try connection.request("open_stream", ["direction": "capture", "channels": 1])
        } throws: { error in
            (error as? AudioError)?.message.contains("recording is not allowed for greedy") == true
        }
        #expect(rig.server.streams.snapshot().count == 2)
        connection.close()
    }

    @Test("session ops go to the handler with the peer's pid; events reach the client")
    func sessionOpsAndEvents() throws {
        let rig = try ApplianceTestRig()
        let connection = try ApplianceConnection.connect(path: rig.path, name: "session")
        let reply = try connection.request("session_activate", ["category": "playback", "options": .array([])])
        #expect(reply["handled"] == "session_activate" && reply["pid"] == .int(Int(getpid())))
        let events = Mutex<[ApplianceEvent]>([])
        connection.onEvent { event in events.withLock { $0.append(event) } }
        rig.server.send(.duck(gainDB: -12, active: true), toClient: getpid())
        rig.server.send(.interruptionEnded(shouldResume: true), toClient: getpid())
        rig.server.send(.routeChange(reason: "newDeviceAvailable", outputs: ["hw:0"], inputs: []), toClient: getpid())
        #expect(ApplianceTestRig.eventually {
            events.withLock { $0 } == [.duck(gainDB: -12, active: true), .interruptionEnded(shouldResume: true), .routeChange(reason: "newDeviceAvailable", outputs: ["hw:0"], inputs: [])]
        })
        rig.stop()
        #expect(ApplianceTestRig.eventually { events.withLock { $0.last } == .disconnected })
        #expect(throws: AudioError.self) { try connection.request("session_status", [:]) }
    }

    @Test("JSON: escapes, unicode, numbers and nesting round-trip; depth is bounded")
    func json() throws {
        let value: ApplianceValue = .object([
            "s": "a\"b\\c\n\u{1}é😀", "i": -42, "d": 0.25, "b": true, "n": .null, "a": .array([1, "x", .object([:])]),
        ])
        let text = ApplianceJSON.serialize(value)
        #expect(try ApplianceJSON.parseObject(text) == value.objectValue)
        #expect(try ApplianceJSON.parseObject(Array(#"{"u":"\u00e9\ud83d\ude00"}"#.utf8))["u"] == "é😀")
        #expect(throws: AudioError.self) { try ApplianceJSON.parseObject(Array((String(repeating: "[", count: 100) + String(repeating: "]", count: 100)).utf8)) }
        #expect(throws: AudioError.self) { try ApplianceJSON.parseObject(Array(#"{"a":1,"a":2}"#.utf8)) }
        #expect(throws: AudioError.self) { try ApplianceJSON.parseObject(Array(#"{"a":01}"#.utf8)) }
    }

    @Test("device names: sonora and sonora:PATH")
    func deviceNames() throws {
        #expect(try DeviceSpecifier(parsing: "sonora") == .appliance(socketPath: nil))
        #expect(try DeviceSpecifier(parsing: "sonora:/run/x/server.sock") == .appliance(socketPath: "/run/x/server.sock"))
        #expect(DeviceSpecifier.appliance(socketPath: "/run/x/server.sock").name == "sonora:/run/x/server.sock")
        #expect(DeviceSpecifier.appliance(socketPath: nil).name == "sonora")
        #expect(DeviceSpecifier.appliance(socketPath: nil).driver == "sonora")
        #expect(DeviceSpecifier.isReserved("sonora"))
        #expect(throws: AudioError.self) { try DeviceSpecifier(parsing: "sonora:relative.sock") }
        #expect(throws: AudioError.self) { try DeviceSpecifier(parsing: "sonora:/" + String(repeating: "x", count: 120)) }
    }

    @Test("AudioDevices opens sonora:PATH; no appliance there is a clear error")
    func factory() throws {
        let rig = try ApplianceTestRig()
        let device = try AudioDevices.open(named: "sonora:\(rig.path)", configuration: AudioDeviceConfiguration(periodFrames: 256, inputChannels: 0, outputChannels: 2))
        #expect(device.driver == "sonora")
        #expect(device.format.periodFrames == ApplianceTestRig.period)
        #expect(device.format.notes.contains { $0.contains("period is \(ApplianceTestRig.period)") })
        #expect {
            try AudioDevices.open(named: "sonora:/tmp/no-such-dir/server.sock", configuration: AudioDeviceConfiguration())
        } throws: { error in
            (error as? AudioError)?.message.contains("no Sonora appliance at /tmp/no-such-dir/server.sock") == true
        }
    }
}

import Synchronization
