import ArgumentParser
import Foundation
import SonoraPipeline
import SonoraUnits

#if canImport(Glibc)
import Glibc
#endif

struct CtlCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ctl",
        abstract: "Control a running `sonora run` over its control socket.",
        discussion: """
            Commands:
            \(ControlVerb.helpLines)

            PARAM is a name or an ID; NODE may be a mixer3d's source, NODE.SOURCE, whose PARAM is `position` (x,y,z) or one of its input parameters (gain, azimuth …); VALUE may carry a unit (-6dB, 1.2 kHz, 250 ms, on) and may start with '-' (no `--` needed). Options go anywhere. The socket is --socket, else $SONORA_SOCKET, else /tmp/sonora.sock. Human output by default, the daemon's JSON answer with --json. Exits 1 with the reason on stderr when the request fails or no answer comes within --timeout seconds.

            Examples:
              sonora ctl --socket /tmp/sonora.sock status
              sonora ctl set trim gain -6dB
              sonora ctl set mixer volume -6dB --scope input --element 1 --ramp 0.2
              sonora ctl set scene.bell position 1,0,-2     # a mixer3d source: x,y,z metres
              sonora ctl property eq bypass on
              sonora ctl params eq --json
              sonora ctl save --overwrite /etc/sonora/current.yaml
              sonora ctl device hw:Headphones
              sonora ctl metrics                     # Prometheus' text format
              sonora ctl transport tempo 96                # also: play, stop, locate 8, meter 3/4
              sonora ctl transport play --at 480000        # at an exact graph sample time
              sonora ctl patch synth gain 0.5              # an LV2 patch property by label, URI or URID
            """
    )

    @Option(help: "The control socket path.")
    var socket: String?

    @Option(help: "Parameter scope (global, input, output).")
    var scope: String?

    @Option(help: "Parameter element (bus), from 0.")
    var element: Int?

    @Option(help: "Ramp a set over this many seconds (0…60).")
    var ramp: Double?

    @Option(help: "Seconds to wait for the daemon's answer.")
    var timeout: Double = 5

    @Flag(help: "save: replace an existing file (without it, an existing path is refused).")
    var overwrite = false

    @Option(help: "transport: the graph sample time a change is due at (frames; `transport` shows the current one).")
    var at: Int64?

    @Flag(help: "Print the daemon's JSON answer.")
    var json = false

    // `.allUnrecognized`: words that look like options (a value such as -6dB) stay words,
    // while the options above are still recognized in any position.
    @Argument(parsing: .allUnrecognized, help: "The command and its arguments.")
    var words: [String] = []

    func validate() throws {
        guard timeout > 0 && timeout.isFinite else { throw ValidationError("--timeout must be a positive number of seconds") }
        if let ramp, !(ramp >= 0 && ramp <= 60) { throw ValidationError("--ramp must be 0…60 seconds") }
        if let element, element < 0 { throw ValidationError("--element must be 0 or more") }
        if overwrite && words.first != "save" { throw ValidationError("--overwrite goes with save") }
    }

    /// The typed request the words ask for.
    func request() throws -> ControlRequest {
        // A word such as --scpoe is a mistyped option, not a value (values never start with --).
        if let option = words.first(where: { $0.hasPrefix("--") }) {
            let known = ["--socket", "--scope", "--element", "--ramp", "--timeout", "--overwrite", "--at", "--json", "--help"]
            throw ValidationError("unknown option '\(option)'\(Self.hint(option, known))")
        }
        let verbs = ControlVerb.allCases.map(\.rawValue)
        guard let first = words.first else { throw ValidationError("give a command: \(verbs.joined(separator: ", "))") }
        guard let verb = ControlVerb(rawValue: first) else {
            throw ValidationError("unknown command '\(first)'\(Self.hint(first, verbs)); commands: \(verbs.joined(separator: ", "))")
        }
        let args = Array(words.dropFirst())
        func need(_ counts: ClosedRange<Int>) throws {
            guard counts.contains(args.count) else { throw ValidationError("usage: sonora ctl \(verb.usage)") }
        }
        if scope != nil || element != nil { guard verb == .get || verb == .set else { throw ValidationError("--scope and --element go with get and set") } }
        if ramp != nil { guard verb == .set else { throw ValidationError("--ramp goes with set") } }
        if at != nil { guard verb == .transport else { throw ValidationError("--at goes with transport") } }
        switch verb {
        case .nodes: try need(0...0); return .nodes
        case .meters: try need(0...0); return .meters
        case .status: try need(0...0); return .status
        case .reload: try need(0...0); return .reload
        case .device:
            try need(1...2)
            return .device(playback: args[0], capture: args.count == 2 ? args[1] : nil)
        case .version: try need(0...0); return .version
        case .metrics: try need(0...0); return .metrics
        case .params: try need(1...1); return .parameters(node: args[0])
        case .get:
            try need(2...2)
            return .get(try selector(args[0], args[1]))
        case .set:
            try need(3...3)
            return .set(try selector(args[0], args[1]), value: try Self.value(args[2]), ramp: ramp)
        case .property:
            try need(2...3)
            let names = ControlProperty.allCases.map(\.rawValue)
            guard let property = ControlProperty(rawValue: args[1].lowercased()) else {
                throw ValidationError("no property '\(args[1])'\(Self.hint(args[1], names)); properties: \(names.joined(separator: ", "))")
            }
            guard args.count == 3 else { return .getProperty(node: args[0], property: property) }
            switch property {
            case .bypass:
                guard let on = Self.flag(args[2]) else { throw ValidationError("bypass is on or off (1/0, true/false, on/off, yes/no), not '\(args[2])'") }
                return .setProperty(node: args[0], .bypass(on))
            case .preset:
                return .setProperty(node: args[0], .preset(args[2]))
            case .latency, .tail:
                throw ValidationError("\(property.rawValue) is read-only; settable: \(ControlProperty.settable.map(\.rawValue).joined(separator: ", "))")
            }
        case .save:
            try need(1...1)
            return .save(path: URL(fileURLWithPath: args[0]).standardizedFileURL.path, overwrite: overwrite)
        case .transport: return try transportRequest(args)
        case .patch: return try patchRequest(args)
        }
    }

    private func selector(_ node: String, _ parameter: String) throws -> ControlRequest.ParameterSelector {
        var parsedScope: AudioUnitScope?
        if let scope {
            guard let found = AudioUnitScope.allCases.first(where: { $0.description == scope.lowercased() }) else {
                let names = AudioUnitScope.allCases.map(\.description)
                throw ValidationError("--scope must be \(names.joined(separator: ", ")), not '\(scope)'\(Self.hint(scope, names))")
            }
            parsedScope = found
        }
        let name: ControlRequest.ParameterName = UInt32(parameter).map { .id($0) } ?? .name(parameter)
        return ControlRequest.ParameterSelector(node: node, parameter: name, scope: parsedScope, element: element)
    }

    /// A number when the word is one (refusing NaN and infinities), else the text for
    /// the daemon to read with its unit ("-6dB", "1.2 kHz", "pink noise").
    static func value(_ word: String) throws -> ControlValue {
        if let number = Double(word) {
            guard number.isFinite else { throw ValidationError("VALUE must be a finite number, not '\(word)'") }
            return .number(number)
        }
        return .text(word)
    }

    static func flag(_ word: String) -> Bool? {
        switch word.lowercased() {
        case "1", "true", "on", "yes": true
        case "0", "false", "off", "no": false
        default: nil
        }
    }

    static func hint(_ word: String, _ candidates: [String]) -> String {
        ControlProtocol.suggestion(for: word, in: candidates)
    }

    func run() throws {
        let path = socket ?? ProcessInfo.processInfo.environment["SONORA_SOCKET"] ?? "/tmp/sonora.sock"
        let body = try request()
        let answer: Data
        do { answer = try ControlClient(path: path, timeout: timeout).exchange(body) } catch { throw CLIError("\(error)") }
        let response: ControlResponse
        do {
            response = try ControlResponse.decode(answer, for: body.command)
        } catch {
            throw CLIError("the daemon answered something that is not a \(body.command.name) answer: \(String(decoding: answer.prefix(200), as: UTF8.self))")
        }
        if json {
            print(String(decoding: answer, as: UTF8.self))
        } else {
            printHuman(response)
        }
        if case .failure(let failure) = response {
            var message = "Error: \(failure.message)"
            if failure.code != .reloadRefused { message += " [\(failure.code.rawValue)\(failure.field.map { ", field \($0)" } ?? "")]" }
            FileHandle.standardError.write(Data((message + "\n").utf8))
            throw ExitCode(1)
        }
    }

    private func printHuman(_ response: ControlResponse) {
        switch response {
        case .nodes(let nodes):
            for node in nodes {
                print("\(node.id)\t\(node.kind)\t\(node.unit)")
                // A clients node's attached programs, one line per stream.
                for stream in node.streams ?? [] {
                    print(String(
                        format: "  stream %d\t%@ (pid %d)\t%@, %d ch\tgain %.1f dB, peak %.1f dBFS, %d underruns%@", stream.stream, stream.program,
                        stream.pid, stream.direction, stream.channels, stream.gainDB, stream.peakDBFS, stream.underruns, stream.faulted ? ", faulted" : ""))
                }
            }
        case .parameters(_, let list):
            for p in list {
                let value = p.value.map { String(format: "%g", $0) } ?? "?"
                let element = p.scope == "global" ? "" : "[\(p.element)]"
                print(String(format: "%4d %@%@ %@ = %@ %@ (%g…%g)%@", p.id, p.scope, element, p.name, value, p.unit, p.min, p.max, p.writable ? "" : " read-only"))
            }
        case .parameter(let reading):
            let address = reading.scope == "global" ? "" : " [\(reading.scope) \(reading.element)]"
            // A vector (a mixer3d source's position) as it is written: x,y,z.
            let shown = reading.values.map { $0.map { String(format: "%g", $0) }.joined(separator: ",") } ?? String(format: "%g", reading.value)
            print("\(reading.param)\(address) = \(shown)\(reading.unit.isEmpty ? "" : " \(reading.unit)")")
        case .property(let reading):
            var line = "\(reading.property.rawValue) = \(reading.value)"
            if let presets = reading.presets, !presets.isEmpty { line += " (presets: \(presets.joined(separator: ", ")))" }
            print(line)
        case .meters(let meters):
            for m in meters { print(String(format: "%@.%@[%d] %.1f %@", m.node, m.meter, m.element, m.value, m.unit)) }
        case .status(let s):
            print("device: \(s.device)\(s.deviceName.map { $0 == s.device ? "" : " (\($0))" } ?? "")")
            print("running: \(s.running)")
            print("cycles: \(s.cycles)")
            print("xruns: \(s.xruns)")
            print(String(format: "load: %.1f%% mean, %.1f%% max", s.loadMean * 100, s.loadMax * 100))
            print(String(format: "latency: %d frames (%.2f ms)", s.latencyFrames, s.latencyMilliseconds))
            print(String(format: "rate scalar: %.6f", s.rateScalar))
            print("interruptions: \(s.interruptions)")
            for failure in s.recorderFailures { print("recording failed: \(failure)") }
        case .reloaded:
            print("reloaded")
        case .saved(let path):
            print("saved \(path)")
        case .version(let info):
            print("sonora \(info.sonora), control protocol \(info.protocol)")
        case .metrics(let text):
            print(text, terminator: "")
        case .transport(let reading):
            Self.printTransport(reading)
        case .patch(let reading):
            Self.printPatch(reading)
        case .failure:
            break
        }
    }
}

/// `sonora ctl`'s words for the protocol's commands (`property` is both get- and
/// set-property), derived from `ControlCommand` so a new command needs a usage here.
enum ControlVerb: String, CaseIterable {
    case nodes, params, get, set, property, meters, status, reload, save, device, version, metrics, transport, patch

    init(_ command: ControlCommand) {
        switch command {
        case .nodes: self = .nodes
        case .params: self = .params
        case .get: self = .get
        case .set: self = .set
        case .getProperty, .setProperty: self = .property
        case .meters: self = .meters
        case .status: self = .status
        case .reload: self = .reload
        case .save: self = .save
        case .device: self = .device
        case .version: self = .version
        case .metrics: self = .metrics
        case .transport: self = .transport
        case .patch: self = .patch
        }
    }

    var usage: String {
        switch self {
        case .nodes, .meters, .status, .reload, .version, .metrics: rawValue
        case .params: "params NODE"
        case .get: "get NODE PARAM"
        case .set: "set NODE PARAM VALUE"
        case .property: "property NODE NAME [VALUE]"
        case .save: "save PATH"
        case .device: "device PLAYBACK [CAPTURE]"
        case .transport: "transport [ACTION [VALUE]]"
        case .patch: "patch NODE [PROPERTY [VALUE]]"
        }
    }

    /// One line per protocol command, under its CLI usage.
    static var helpLines: String {
        var lines: [String] = []
        for verb in allCases {
            for (index, command) in ControlCommand.allCases.filter({ ControlVerb($0) == verb }).enumerated() {
                let usage = index == 0 ? verb.usage : ""
                lines.append("  " + usage.padding(toLength: 28, withPad: " ", startingAt: 0) + command.summary)
            }
        }
        return lines.joined(separator: "\n")
    }
}
