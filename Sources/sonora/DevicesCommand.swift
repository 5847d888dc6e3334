import ArgumentParser
import Foundation
import SonoraCore
import SonoraHAL

struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List audio devices: Sonora's own and every PCM ALSA knows; --probe shows what each grants.",
        discussion: """
            Sonora's devices need no sound card: `null` (timer-paced), `offline`
            (unpaced), `inprocess:FRAMES` (in-process loopback) and `sonoraloop:NAME`
            (Sonora's ALSA loopback plugin, a real ALSA PCM); and `sonora[:SOCKET]`, a
            running appliance (`sonora run` with a `session` section) that plays and
            records for other programs. When a JACK server runs (the default one, or
            JACK_DEFAULT_SERVER's), `jack`, `jack:self` and a `jack:CLIENT` entry per
            client with audio ports (its ports listed; `ports` in --json). Then every PCM that ALSA's
            `snd_device_name_hint` lists, with capture/playback capability, each under the
            name a config or `--device` takes (an ALSA PCM whose bare name means one of
            Sonora's devices is listed as `alsa:NAME`, e.g. `alsa:null`). With --probe
            each ALSA PCM is opened (non-blocking) in each direction it supports and its
            formats, access types, rates, channels, period sizes and counts are printed;
            a PCM that cannot be opened says why. The libraries' own chatter while
            probing (alsa-lib, libjack's "jack server is not running") is shown only with
            --verbose.

            netjack2 masters do not announce themselves (they only listen on netjack2's
            multicast group), so they are listed only with --netjack: the command then
            asks as a slave would (`SLAVE_AVAILABLE` to --netjack-group, default
            225.3.19.154:19000), lists each master that answers within --netjack-seconds
            as `netjack:slave@ADDRESS` with its rate, period and channels, and declines
            each at once, before it opens a JACK client for the probe; the master logs a
            slave set-up that failed.

            Examples:
              sonora devices
              sonora devices --probe
              sonora devices --probe --json sonoraloop null
              sonora devices --json jack:system
              sonora devices --netjack --json
            """
    )

    @Argument(help: "Probe only these device names (implies --probe).")
    var names: [String] = []

    @Flag(help: "Open each PCM and print what it grants.")
    var probe = false

    @Flag(help: "Show alsa-lib's and libjack's own messages while probing.")
    var verbose = false

    @Flag(help: "Print JSON.")
    var json = false

    @Flag(help: "Ask netjack2 masters to answer and list them (each logs a declined slave set-up).")
    var netjack = false

    @Option(help: "With --netjack: netjack2's multicast group, or a master's address, ADDRESS[:PORT].")
    var netjackGroup = "\(NetJackDeviceName.defaultAddress):\(NetJackDeviceName.defaultPort)"

    @Option(help: "With --netjack: seconds to wait for answers (0.1…10).")
    var netjackSeconds = 1.0

    struct Entry: Codable {
        var name: String
        var description: String
        var capture: Bool
        var playback: Bool
        var source: String
        var probes: [PCMCapabilities]?
        var errors: [String]?
        /// A JACK client's audio ports (`client:port`), for `jack:CLIENT` entries.
        var ports: [String]?
        /// What a netjack2 master answered (`--netjack`), for its `netjack:slave@ADDRESS` entry.
        var master: NetJackMasterAdvert?
    }

    /// An entry and the ALSA PCMs behind it (none for Sonora's timer devices).
    struct Row {
        var entry: Entry
        var capturePCM: String?
        var playbackPCM: String?
    }

    func validate() throws {
        _ = try netjackEndpoint()
        guard netjackSeconds.isFinite, (0.1...10).contains(netjackSeconds) else {
            throw ValidationError("--netjack-seconds must be in 0.1…10 (got \(netjackSeconds))")
        }
        for name in names {
            do {
                _ = try DeviceSpecifier(parsing: name)
            } catch {
                throw ValidationError(error.message)
            }
        }
    }

    func run() throws {
        ALSAConfiguration.showLibraryMessages(verbose)
        let sonora = PCMDirectory.sonoraDevices.map { hint in
            Row(
                entry: Entry(name: hint.name, description: hint.description, capture: hint.canCapture, playback: hint.canPlay, source: hint.source),
                capturePCM: hint.name.hasPrefix("sonoraloop") ? "sonoraloop" : nil,
                playbackPCM: hint.name.hasPrefix("sonoraloop") ? "sonoraloop" : nil)
        }
        let hints = PCMDirectory.alsaHints()
        var rows: [Row]
        if names.isEmpty {
            rows = sonora + jackRows() + hints.map { hint in
                // Listed under the name that reaches it: `null` is Sonora's device.
                let name = DeviceSpecifier.isReserved(hint.name) ? "alsa:\(hint.name)" : hint.name
                return Row(
                    entry: Entry(name: name, description: hint.description, capture: hint.canCapture, playback: hint.canPlay, source: hint.source),
                    capturePCM: hint.canCapture ? hint.name : nil, playbackPCM: hint.canPlay ? hint.name : nil)
            }
        } else {
            rows = try names.map { name in
                switch try DeviceSpecifier(parsing: name) {
                case .alsa(let capture, let playback):
                    return Row(entry: Entry(name: name, description: "", capture: capture != nil, playback: playback != nil, source: "alsa"), capturePCM: capture, playbackPCM: playback)
                case .jack(let jack):
                    let ports = JACKPortDirectory.ports(server: jack.server)
                    guard let ports else { throw CLIError("'\(name)': no JACK server '\(jack.server ?? "default")' is running") }
                    var entry = Entry(name: name, description: "JACK client device", capture: true, playback: true, source: "jack")
                    if case .client(let peer) = jack.peer {
                        let own = ports.filter { $0.name.hasPrefix(peer + ":") }
                        guard !own.isEmpty else { throw CLIError("'\(name)': the JACK server has no client '\(peer)' with audio ports") }
                        entry.ports = own.map(\.name)
                        entry.capture = own.contains { $0.isOutput }
                        entry.playback = own.contains { !$0.isOutput }
                    }
                    return Row(entry: entry, capturePCM: nil, playbackPCM: nil)
                case let specifier:
                    let hint = PCMDirectory.sonoraDevices.first { $0.name.hasPrefix(specifier.driver) }
                    return Row(entry: Entry(name: name, description: hint?.description ?? "", capture: true, playback: true, source: "sonora"), capturePCM: nil, playbackPCM: nil)
                }
            }
        }
        if probe || !names.isEmpty {
            for index in rows.indices where rows[index].capturePCM != nil || rows[index].playbackPCM != nil {
                var probes: [PCMCapabilities] = []
                var errors: [String] = []
                for (pcm, capture) in [(rows[index].capturePCM, true), (rows[index].playbackPCM, false)] {
                    guard let pcm else { continue }
                    do {
                        probes.append(try PCMDirectory.probe(pcm, capture: capture))
                    } catch {
                        errors.append(error.message)
                    }
                }
                rows[index].entry.probes = probes
                rows[index].entry.errors = errors.isEmpty ? nil : errors
            }
            let asked = rows.filter { $0.entry.source == "alsa" }
            if !names.isEmpty && !asked.isEmpty && asked.allSatisfy({ ($0.entry.probes ?? []).isEmpty }) {
                throw CLIError(asked.flatMap { $0.entry.errors ?? [] }.joined(separator: "\n"))
            }
        }
        var unanswered: String?
        if netjack {
            let (address, port) = try netjackEndpoint()
            let masters: [NetJackMasterAdvert]
            do {
                masters = try NetJackMasterProbe.probe(group: address, port: port, seconds: netjackSeconds)
            } catch {
                throw CLIError(error.message)
            }
            if masters.isEmpty {
                unanswered = "netjack2: no master answered on \(address):\(port) within \(netjackSeconds) s"
            }
            rows += masters.map { master in
                var entry = Entry(
                    name: "netjack:slave@\(master.address)",
                    description: "netjack2 master '\(master.name)': \(master.sampleRate) Hz, \(master.periodFrames) frames, \(master.sendChannels) channels to a slave, \(master.returnChannels) back",
                    capture: master.sendChannels != 0, playback: master.returnChannels != 0, source: "netjack")
                entry.master = master
                return Row(entry: entry, capturePCM: nil, playbackPCM: nil)
            }
        }
        let entries = rows.map(\.entry)
        if let unanswered { FileHandle.standardError.write(Data((unanswered + "\n").utf8)) }
        if json { return try printJSON(entries) }
        if hints.isEmpty && names.isEmpty {
            print("ALSA lists no PCMs (no sound card here); Sonora's own devices work without one.\n")
        }
        for entry in entries {
            let io = [entry.capture ? "capture" : nil, entry.playback ? "playback" : nil].compactMap { $0 }.joined(separator: "+")
            print("\(entry.name)  [\(io)]\(entry.description.isEmpty ? "" : "  \(entry.description)")")
            for probe in entry.probes ?? [] {
                print("    \(probe.direction): \(probe.formats.joined(separator: " ")); \(probe.accesses.joined(separator: " "))")
                print("      rate \(text(probe.rates)) Hz, channels \(text(probe.channels)), period \(text(probe.periodFrames)) frames × \(text(probe.periods)), buffer \(text(probe.bufferFrames))")
            }
            for error in entry.errors ?? [] { print("    cannot open: \(error)") }
        }
    }

    /// `jack`, `jack:self` and one `jack:CLIENT` per client with audio ports, when a JACK
    /// server runs (the default one: `JACK_DEFAULT_SERVER`, else "default"); none otherwise.
    private func jackRows() -> [Row] {
        guard let ports = JACKPortDirectory.ports() else { return [] }
        var rows = [
            Row(entry: Entry(name: "jack", description: "JACK client, ports not connected", capture: true, playback: true, source: "jack"), capturePCM: nil, playbackPCM: nil),
            Row(entry: Entry(name: "jack:self", description: "JACK client, its outputs connected to its inputs (one period round trip)", capture: true, playback: true, source: "jack"), capturePCM: nil, playbackPCM: nil),
        ]
        var clients: [String] = []
        for port in ports {
            let client = String(port.name.prefix { $0 != ":" })
            if !clients.contains(client) { clients.append(client) }
        }
        for client in clients {
            let own = ports.filter { $0.name.hasPrefix(client + ":") }
            let physical = own.allSatisfy(\.isPhysical) ? "physical " : ""
            var entry = Entry(
                name: "jack:\(client)", description: "JACK \(physical)ports: \(own.map(\.name).joined(separator: " "))",
                capture: own.contains { $0.isOutput }, playback: own.contains { !$0.isOutput }, source: "jack")
            entry.ports = own.map(\.name)
            rows.append(Row(entry: entry, capturePCM: nil, playbackPCM: nil))
        }
        return rows
    }

    /// --netjack-group as an address and a port (netjack device names' own parsing and errors).
    private func netjackEndpoint() throws -> (address: String, port: Int) {
        guard !netjackGroup.contains(",") else { throw ValidationError("--netjack-group: '\(netjackGroup)' is ADDRESS[:PORT], no options") }
        do {
            let name = try NetJackDeviceName.parse("slave@" + netjackGroup)
            return (name.address, name.port)
        } catch {
            throw ValidationError("--netjack-group: " + error.message)
        }
    }

    private func text(_ range: ClosedRange<Int>) -> String {
        range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound)–\(range.upperBound)"
    }
}
