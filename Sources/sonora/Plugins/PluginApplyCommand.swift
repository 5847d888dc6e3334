import ArgumentParser
import Foundation
import SonoraCore
import SonoraFile
import SonoraLV2
import SonoraUnits

/// lilv's `lv2apply`, with Sonora's host: features, any block size, presets, and the
/// control outputs and latency printed at the end.
struct PluginApplyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apply",
        abstract: "Apply an LV2 plugin to an audio file (lv2apply's interface, with Sonora's host).",
        discussion: """
            Controls are set with -c SYMBOL VALUE (or -c SYMBOL=VALUE) before the run; a
            preset (--preset LABEL or URI) is applied first, then the -c values. A mono input
            feeds every audio input, as lv2apply does; otherwise the file's channels
            feed the input buses in order (main bus, then sidechain). The output has
            every output bus's channels in order, as 32-bit float. At the end the
            control outputs and the latency are printed (--json for scripts). Plugin
            work (worker:schedule) runs inline, so a render is deterministic. OUT is never
            IN, and an existing OUT is replaced only with --overwrite.

            Examples:
              sonora plugins apply http://lv2plug.in/plugins/eg-amp -c gain -6 in.wav out.wav
              sonora plugins apply URI -c SYMBOL=0.3 --block-size 64 in.wav out.wav
              sonora plugins apply URI --preset Disco --json in.wav out.wav
            """
    )

    @Argument(help: "The plugin's URI.")
    var uri: String

    @Option(name: .customShort("c"), parsing: .unconditionalSingleValue, help: "A control: -c SYMBOL VALUE or -c SYMBOL=VALUE (repeatable).")
    var controls: [String] = []

    @Option(help: "A preset (its label or URI; sonora plugins info lists them) to apply before the -c values.")
    var preset: String?

    @Option(help: "Frames per run() call (1…65536).")
    var blockSize = 512

    @Flag(help: "Print the result (control outputs, latency) as JSON.")
    var json = false

    @Flag(help: "Replace OUT if it exists (never when it is IN).")
    var overwrite = false

    @Argument(parsing: .allUnrecognized, help: "IN.wav OUT.wav (after the values of -c SYMBOL VALUE).")
    var arguments: [String] = []

    struct Result: Codable {
        var plugin: String
        var input: String
        var output: String
        var frames: Int
        var blockSize: Int
        var controls: [String: Float]
        var controlOutputs: [String: Float]
        var latencyFrames: Int
        var log: [String]
    }

    func run() throws {
        do {
            try apply()
        } catch let error as AudioError {
            throw CLIError("\(error)")
        }
    }

    /// Pairs each `-c SYMBOL` with its value; the last two positional arguments are the files.
    func parse() throws -> (controls: [(String, Float)], input: String, output: String) {
        var positional = arguments
        var pairs: [(String, Float)] = []
        var separate = controls.filter { !$0.contains("=") }.count
        guard positional.count == separate + 2 else {
            throw CLIError("expected IN.wav OUT.wav after the control values (got: \(positional.joined(separator: " ")))")
        }
        for control in controls {
            let symbol: String
            let text: String
            if let equals = control.firstIndex(of: "=") {
                symbol = String(control[..<equals])
                text = String(control[control.index(after: equals)...])
            } else {
                symbol = control
                text = positional.removeFirst()
                separate -= 1
            }
            guard let value = Float(text), value.isFinite else {
                throw CLIError("control '\(symbol)': '\(text)' is not a number")
            }
            pairs.append((symbol, value))
        }
        return (pairs, positional[0], positional[1])
    }

    private func apply() throws {
        let (controlValues, inputPath, outputPath) = try parse()
        try OutputFile.check(outputPath, inputs: [inputPath], overwrite: overwrite)
        guard (1...65536).contains(blockSize) else { throw CLIError("--block-size \(blockSize) is outside 1…65536") }
        let input = try PluginAudioFile.read(inputPath)
        let unit = try LV2Unit(
            uri: uri, options: .init(sampleRate: input.sampleRate, maximumFrames: blockSize, workerMode: .inline))
        if let preset { try unit.applyPreset(named: preset) }
        for (symbol, value) in controlValues {
            guard let port = unit.plugin.port(symbol: symbol), port.kind == .control, port.direction == .input else {
                throw CLIError("\(unit.plugin.uri) has no control input '\(symbol)' (see: sonora plugins info \(unit.plugin.uri))")
            }
            let change = try unit.setControl(symbol, to: value)
            if change.wasClamped {
                FileHandle.standardError.write(Data("sonora: \(symbol) = \(value) is out of range; using \(change.applied)\n".utf8))
            }
        }
        let inputs = try feed(input.channels, to: unit)
        let outputs = try unit.renderOffline(inputs: inputs, frameCount: input.channels.first?.count ?? 0, blockSize: blockSize)
        let channels = outputs.flatMap { $0 }
        guard !channels.isEmpty else { throw CLIError("\(unit.plugin.uri) has no audio output to write") }
        try PluginAudioFile.write(channels, sampleRate: input.sampleRate, to: outputPath, erase: overwrite)

        var controlsSet: [String: Float] = [:]
        var controlOutputs: [String: Float] = [:]
        for port in unit.plugin.ports where port.kind == .control {
            let value = try unit.control(port.symbol)
            if port.direction == .input { controlsSet[port.symbol] = value } else { controlOutputs[port.symbol] = value }
        }
        let result = Result(
            plugin: unit.plugin.uri, input: inputPath, output: outputPath, frames: channels[0].count, blockSize: blockSize,
            controls: controlsSet, controlOutputs: controlOutputs, latencyFrames: unit.latencyFrames,
            log: unit.recentLogMessages.map { "\($0.level): \($0.text)" })
        if json { return try printJSON(result) }
        print("\(unit.plugin.name): \(result.frames) frames, block size \(blockSize) → \(outputPath)")
        for (symbol, value) in controlOutputs.sorted(by: { $0.key < $1.key }) { print("  \(symbol) = \(value)") }
        print("  latency: \(result.latencyFrames) frames")
    }

    /// A mono file feeds every input channel; otherwise channels go to the buses in order.
    func feed(_ channels: [[Float]], to unit: LV2Unit) throws -> [[[Float]]] {
        let buses = unit.layout.inputs
        let needed = buses.map(\.ports.count).reduce(0, +)
        if channels.count == 1 { return buses.map { _ in [channels[0]] } }
        guard channels.count == needed else {
            throw CLIError(
                "the input has \(channels.count) channels; \(unit.plugin.name) takes a mono file (fed to every input)\(needed > 1 ? " or one with \(needed) channels" : "")")
        }
        var next = 0
        return buses.map { bus in
            defer { next += bus.ports.count }
            return Array(channels[next..<next + bus.ports.count])
        }
    }
}
