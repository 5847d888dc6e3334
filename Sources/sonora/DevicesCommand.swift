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
            (Sonora's ALSA loopback plugin, a real ALSA PCM). Then every PCM that ALSA's
            `snd_device_name_hint` lists, with capture/playback capability. With --probe
            each is opened (non-blocking) in each direction it supports and its formats,
            access types, rates, channels, period sizes and counts are printed; a PCM that
            cannot be opened says why.

            Examples:
              sonora devices
              sonora devices --probe
              sonora devices --probe --json sonoraloop null
            """
    )

    @Argument(help: "Probe only these PCM names (implies --probe).")
    var names: [String] = []

    @Flag(help: "Open each PCM and print what it grants.")
    var probe = false

    @Flag(help: "Print JSON.")
    var json = false

    struct Entry: Codable {
        var name: String
        var description: String
        var capture: Bool
        var playback: Bool
        var source: String
        var probes: [PCMCapabilities]?
        var errors: [String]?
    }

    func run() throws {
        var entries: [Entry]
        if names.isEmpty {
            entries = (PCMDirectory.sonoraDevices + PCMDirectory.alsaHints()).map {
                Entry(name: $0.name, description: $0.description, capture: $0.canCapture, playback: $0.canPlay, source: $0.source)
            }
        } else {
            entries = names.map { Entry(name: $0, description: "", capture: true, playback: true, source: "alsa") }
        }
        if probe || !names.isEmpty {
            for index in entries.indices where entries[index].source == "alsa" || entries[index].name.hasPrefix("sonoraloop") {
                let name = entries[index].name.replacingOccurrences(of: ":NAME", with: "")
                var probes: [PCMCapabilities] = []
                var errors: [String] = []
                for capture in [true, false] where capture ? entries[index].capture : entries[index].playback {
                    do {
                        probes.append(try PCMDirectory.probe(name, capture: capture))
                    } catch {
                        errors.append(error.message)
                    }
                }
                entries[index].probes = probes
                entries[index].errors = errors.isEmpty ? nil : errors
            }
            if !names.isEmpty && entries.allSatisfy({ ($0.probes ?? []).isEmpty }) {
                throw CLIError(entries.flatMap { $0.errors ?? [] }.joined(separator: "\n"))
            }
        }
        if json { return try printJSON(entries) }
        if PCMDirectory.alsaHints().isEmpty && names.isEmpty {
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

    private func text(_ range: ClosedRange<Int>) -> String {
        range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound)–\(range.upperBound)"
    }
}
