import ArgumentParser
import Foundation
import SonoraLV2

struct PluginInfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Describe one LV2 plugin in full: ports with ranges, units, properties, scale points; buses; presets.",
        discussion: """
            Buses are the audio-unit elements Sonora makes of the audio ports (by port
            group, sidechain and designation); parameters have ID = port index.

            Examples:
              sonora plugins info http://lv2plug.in/plugins/eg-amp
              sonora plugins info --json http://drobilla.net/plugins/mda/Delay
            """
    )

    @Argument(help: "The plugin's URI.")
    var uri: String

    @Flag(help: "Print JSON.")
    var json = false

    struct Detail: Codable {
        var plugin: LV2PluginDescription
        var inputBuses: [[String]]
        var outputBuses: [[String]]
        var presets: [LV2Preset]
        var missingFeatures: [String]
    }

    func run() throws {
        let world = LV2World.shared
        let plugin: LV2PluginDescription
        let presets: [LV2Preset]
        do {
            plugin = try world.plugin(uri)
            presets = try world.presets(of: uri)
        } catch {
            throw CLIError("\(error)")
        }
        let layout = LV2BusLayout(plugin)
        func names(_ buses: [LV2BusLayout.Bus]) -> [[String]] {
            buses.map { [$0.name] + $0.ports.map { plugin.port(index: $0)?.symbol ?? "?" } }
        }
        let detail = Detail(
            plugin: plugin, inputBuses: names(layout.inputs), outputBuses: names(layout.outputs), presets: presets,
            missingFeatures: plugin.missingFeatures)
        if json { return try printJSON(detail) }
        print("\(plugin.uri)\n  name: \(plugin.name)\n  class: \(plugin.className)")
        if let author = plugin.author { print("  author: \(author)") }
        if let bundle = plugin.bundlePath { print("  bundle: \(bundle)") }
        print("  required features: \(plugin.requiredFeatures.map(URIText.short).joined(separator: ", ").ifEmpty("none"))")
        print("  optional features: \(plugin.optionalFeatures.map(URIText.short).joined(separator: ", ").ifEmpty("none"))")
        print("  hard-RT capable: \(plugin.isHardRTCapable ? "yes" : "no (not promised)"), in-place broken: \(plugin.isInPlaceBroken ? "yes (never aliased)" : "no"), live: \(plugin.isLive ? "yes" : "no")")
        if !plugin.missingFeatures.isEmpty {
            print("  NOT PROVIDED by Sonora: \(plugin.missingFeatures.joined(separator: ", "))")
        }
        print("  input buses: \(detail.inputBuses.map { "\($0[0]) [\($0.dropFirst().joined(separator: ", "))]" }.joined(separator: "; ").ifEmpty("none"))")
        print("  output buses: \(detail.outputBuses.map { "\($0[0]) [\($0.dropFirst().joined(separator: ", "))]" }.joined(separator: "; ").ifEmpty("none"))")
        print("  ports:")
        for port in plugin.ports {
            var line = "    \(port.index) \(port.symbol) (\(port.name)): \(port.kind.rawValue) \(port.direction.rawValue)"
            if port.kind == .control {
                let scale = port.isSampleRateScaled ? " × sample rate" : ""
                line += ", \(port.minimum.map { "\($0)" } ?? "?")…\(port.maximum.map { "\($0)" } ?? "?")\(scale), default \(port.defaultValue.map { "\($0)" } ?? "none")"
            }
            if let unit = port.unit { line += ", unit \(URIText.short(unit))" }
            let properties = port.properties.map(URIText.short).sorted()
            if !properties.isEmpty { line += ", \(properties.joined(separator: " "))" }
            if let designation = port.designation { line += ", designation \(URIText.short(designation))" }
            if let group = port.group { line += ", group \(group)" }
            if let size = port.minimumSize { line += ", minimumSize \(size)" }
            if !port.supports.isEmpty { line += ", supports \(port.supports.map(URIText.short).joined(separator: " "))" }
            print(line)
            for point in port.scalePoints { print("        \(point.value) = \(point.label)") }
        }
        if !plugin.patchParameters.isEmpty {
            print("  patch parameters (patch:Set on the control atom port):")
            for parameter in plugin.patchParameters {
                var line = "    \(parameter.uri) (\(parameter.label)): \(parameter.range.map(URIText.short) ?? "any")"
                if let minimum = parameter.minimum, let maximum = parameter.maximum { line += ", \(minimum)…\(maximum)" }
                line += parameter.isWritable ? (parameter.isReadable ? ", read/write" : ", write") : ", read"
                print(line)
            }
        }
        print("  presets: \(presets.isEmpty ? "none" : "")")
        for preset in presets { print("    \(preset.label)  <\(preset.uri)>") }
    }
}

extension String {
    func ifEmpty(_ replacement: String) -> String { isEmpty ? replacement : self }
}
