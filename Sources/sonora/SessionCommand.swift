import ArgumentParser
import Dispatch
import Foundation
import SonoraCore
import SonoraHAL
import SonoraPipeline

/// `sonora session`: the appliance's audio sessions from a shell.
struct SessionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "session",
        abstract: "Look at and take part in the appliance's audio sessions.",
        discussion: """
            When `sonora run` has a `session` section it owns the sound card: other programs
            attach to its session socket, and its policy decides who is heard (categories,
            roles, interruptions, ducking). The socket is --socket, else SONORA_SERVER, else
            the default ($XDG_RUNTIME_DIR/sonora/server.sock; /run/sonora/server.sock for root).

            Examples:
              sonora session status
              sonora session status --json
              sonora session activate --category playAndRecord --role intercom --seconds 10
              sonora session activate --category playback --option duckOthers --seconds 2 --json
            """,
        subcommands: [SessionStatusCommand.self, SessionActivateCommand.self]
    )
}

struct SessionSocketOptions: ParsableArguments {
    @Option(help: "The appliance's session socket (default: SONORA_SERVER, else the default path).")
    var socket: String?

    func connect(name: String = "sonora-session") throws -> ApplianceConnection {
        do { return try ApplianceConnection.connect(path: socket, name: name) } catch {
            // (The message names the path and why.)
            throw CLIError(error.message)
        }
    }
}

struct SessionStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Who is attached to the appliance: categories, roles, active, ducked, interrupted.",
        discussion: """
            One line per attached program: pid, name, role, category, options, whether its
            session is active, ducked (dB) or interrupted (and by whom), and its open streams.

            Examples:
              sonora session status
              sonora session status --socket /run/sonora/server.sock --json
            """
    )

    @OptionGroup var socket: SessionSocketOptions

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let connection = try socket.connect()
        defer { connection.close() }
        let reply: [String: ApplianceValue]
        do { reply = try connection.request("session_status", [:]) } catch { throw CLIError("session status: \(error.message)") }
        let clients = try (reply["clients"] ?? .array([])).decoded(as: [SessionClientStatus].self)
        // The status command itself is attached while it asks: leave it out.
        let others = clients.filter { $0.pid != getpid() }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let format = connection.serverFormat
            let report = Report(
                socket: connection.path, device: format.device, sampleRate: format.sampleRate, periodFrames: format.periodFrames,
                clients: others)
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
            return
        }
        let format = connection.serverFormat
        print("appliance at \(connection.path): \(format.device), \(format.sampleRate) Hz, period \(format.periodFrames)")
        guard !others.isEmpty else {
            print("no programs attached")
            return
        }
        print("pid\tname\trole\tcategory\tstate\tstreams")
        for client in others {
            var state = client.active ? "active" : "inactive"
            if client.interrupted { state += ", interrupted" + (client.interruptedBy.isEmpty ? "" : " by \(client.interruptedBy.map(String.init).joined(separator: ","))") }
            if let ducked = client.duckedDB { state += String(format: ", ducked %.1f dB", ducked) }
            let category = (client.category?.rawValue ?? "-") + (client.options.isEmpty ? "" : "+" + client.options.joined(separator: "+"))
            print("\(client.pid)\t\(client.name)\t\(client.role ?? "-")\t\(category)\t\(state)\t\(client.streams)")
        }
    }

    struct Report: Encodable {
        var socket: String
        var device: String
        var sampleRate: Int
        var periodFrames: Int
        var clients: [SessionClientStatus]
    }
}

struct SessionActivateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "activate",
        abstract: "Hold an active session on the appliance for a while, printing what it is told.",
        discussion: """
            Activates a session of --category (and --role, or the policy's role for the
            category) and keeps it active for --seconds (or until SIGINT/SIGTERM), then
            deactivates it, telling the sessions it interrupted that they may resume. Each
            event the appliance sends (interruption began/ended, duck) is printed as it
            arrives — a JSON object per line with --json. A refused activation exits 1 with
            the policy's reason and who holds the device.

            Examples:
              sonora session activate --category playAndRecord --role intercom --seconds 10
              sonora session activate --category playback --option duckOthers --seconds 2
            """
    )

    @OptionGroup var socket: SessionSocketOptions

    @Option(help: "ambient, soloAmbient, playback, record, playAndRecord or audioProcessing.")
    var category: String

    @Option(help: "The policy role (default: the policy's role for the category).")
    var role: String?

    @Option(name: .customLong("option"), help: "mixWithOthers, duckOthers or defaultToSpeaker (repeatable).")
    var options: [String] = []

    // Unconditional: a negative value must reach validate(), not read as an option.
    @Option(parsing: .unconditional, help: "How long to hold the session active.")
    var seconds: Double = 5

    @Option(help: "The program name the appliance lists.")
    var name = "sonora-session"

    @Flag(help: "Print JSON lines.")
    var json = false

    func validate() throws {
        guard seconds.isFinite && seconds >= 0 && seconds <= 86_400 else { throw ValidationError("--seconds \(seconds) is outside 0 … 86400") }
    }

    func run() throws {
        let connection = try socket.connect(name: name)
        defer { connection.close() }
        let json = json
        let closing = ControlLock(false)
        // Whatever ends the command (a refusal too), the close that follows is no news.
        defer { closing.withLock { $0 = true } }
        connection.onEvent { event in
            if event == .disconnected && closing.withLock({ $0 }) { return }
            let line: [String: ApplianceValue]
            switch event {
            case .interruptionBegan: line = ["event": "interruption", "state": "began"]
            case .interruptionEnded(let resume): line = ["event": "interruption", "state": "ended", "should_resume": .bool(resume)]
            case .duck(let gain, let active): line = ["event": "duck", "gain_db": .double(gain), "active": .bool(active)]
            case .routeChange(let reason, let outputs, _): line = ["event": "route_change", "reason": .string(reason), "outputs": .array(outputs.map { .string($0) })]
            case .streamRemoved(let stream, let reason): line = ["event": "stream_removed", "stream": .int(stream), "reason": .string(reason)]
            case .sessionActivated(let category): line = ["event": "session_activated", "category": .string(category)]
            case .disconnected: line = ["event": "disconnected"]
            }
            Self.emit(line, json: json)
        }
        var fields: [String: ApplianceValue] = ["category": .string(category), "options": .array(options.map { .string($0) })]
        if let role { fields["role"] = .string(role) }
        let reply: [String: ApplianceValue]
        do { reply = try connection.request("session_activate", fields) } catch {
            throw CLIError("activation refused (\(error.code)): \(error.message)")
        }
        Self.emit(["event": "activated", "role": reply["role"] ?? .null, "gain_db": reply["gainDB"] ?? .double(0)], json: json)
        let deadline = Date().addingTimeInterval(seconds)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &set, nil)
        while Date() < deadline, connection.isConnected {
            var timeout = timespec(tv_sec: 0, tv_nsec: 20_000_000)
            if sigtimedwait(&set, nil, &timeout) > 0 { break }
        }
        guard connection.isConnected else { throw CLIError("the appliance went away") }
        do { _ = try connection.request("session_deactivate", ["notify_others": true]) } catch {
            throw CLIError("deactivation: \(error.message)")
        }
        Self.emit(["event": "deactivated"], json: json)
        closing.withLock { $0 = true }
    }

    static func emit(_ line: [String: ApplianceValue], json: Bool) {
        var text: String
        if json {
            text = String(decoding: ApplianceJSON.serialize(.object(line)), as: UTF8.self)
        } else {
            let event = line["event"]?.stringValue ?? ""
            let rest = line.filter { $0.key != "event" }.sorted { $0.key < $1.key }.map { "\($0.key)=\(String(decoding: ApplianceJSON.serialize($0.value), as: UTF8.self))" }
            text = ([event] + rest).joined(separator: " ")
        }
        // Unbuffered: a script reads each event as it happens.
        text += "\n"
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}
