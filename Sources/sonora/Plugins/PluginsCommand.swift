import ArgumentParser
import Foundation
import SonoraLV2

/// `sonora plugins`: the LV2 plugins on the LV2 path, one described in full, or one applied to a file.
struct PluginsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugins",
        abstract: "List the installed LV2 plugins (honours LV2_PATH), describe one, or apply one to a file.",
        discussion: """
            Without a subcommand, lists every plugin whose URI, name, class or author
            contains FILTER: URI, name, class, port counts (audio in/out, control
            in/out, atom, CV), required features and whether Sonora provides them,
            latency port, presets.

            Examples:
              sonora plugins                       # every plugin
              sonora plugins reverb                # those matching "reverb"
              sonora plugins --json mda            # as JSON for scripts
              sonora plugins info http://lv2plug.in/plugins/eg-amp
              sonora plugins apply http://lv2plug.in/plugins/eg-amp -c gain -6 in.wav out.wav
              LV2_PATH=$PWD/Plugins:/usr/lib/lv2 sonora plugins sonora
            """,
        subcommands: [PluginsListCommand.self, PluginInfoCommand.self, PluginApplyCommand.self, PluginSavePresetCommand.self],
        defaultSubcommand: PluginsListCommand.self
    )
}

struct PluginSummary: Codable {
    var uri: String
    var name: String
    var className: String
    var author: String?
    var audioInputs: Int
    var audioOutputs: Int
    var controlInputs: Int
    var controlOutputs: Int
    var atomPorts: Int
    var cvPorts: Int
    var requiredFeatures: [String]
    var missingFeatures: [String]
    var problems: [String]
    var supported: Bool
    var latencyPort: String?
    var presets: Int

    init(_ plugin: LV2PluginDescription, presets: Int) {
        uri = plugin.uri
        name = plugin.name
        className = plugin.className
        author = plugin.author
        audioInputs = plugin.ports(.audio, .input).count
        audioOutputs = plugin.ports(.audio, .output).count
        controlInputs = plugin.ports(.control, .input).count
        controlOutputs = plugin.ports(.control, .output).count
        atomPorts = plugin.ports.filter { $0.kind == .atom }.count
        cvPorts = plugin.ports.filter { $0.kind == .cv }.count
        requiredFeatures = plugin.requiredFeatures
        missingFeatures = plugin.missingFeatures
        problems = plugin.problems
        supported = plugin.missingFeatures.isEmpty && plugin.problems.isEmpty
        latencyPort = plugin.latencyPortIndex.flatMap { plugin.port(index: $0)?.symbol }
        self.presets = presets
    }
}

struct PluginsListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List plugins (the default subcommand).",
        discussion: """
            Examples:
              sonora plugins list delay
              sonora plugins list --json | jq '.[] | select(.supported == false)'
            """
    )

    @Argument(help: "Show only plugins whose URI, name, class or author contains this (case-insensitive).")
    var filter: String?

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let world = LV2World.shared
        let plugins = world.plugins(matching: filter)
        let rows = plugins.map { PluginSummary($0, presets: world.presetCount(of: $0.uri)) }
        if json { return try printJSON(rows) }
        if rows.isEmpty {
            throw CLIError("no LV2 plugin matches '\(filter ?? "")' on the LV2 path (LV2_PATH=\(ProcessInfo.processInfo.environment["LV2_PATH"] ?? "unset"))")
        }
        for row in rows {
            var line = "\(row.uri)\n    \(row.name) — \(row.className)"
            if let author = row.author { line += " — \(author)" }
            line += "\n    audio \(row.audioInputs)→\(row.audioOutputs), controls \(row.controlInputs) in / \(row.controlOutputs) out"
            if row.atomPorts > 0 { line += ", atom \(row.atomPorts)" }
            if row.cvPorts > 0 { line += ", CV \(row.cvPorts)" }
            if let latency = row.latencyPort { line += ", latency port '\(latency)'" }
            if row.presets > 0 { line += ", \(row.presets) presets" }
            let features = row.requiredFeatures.map { URIText.short($0) }
            line += features.isEmpty ? "\n    needs no feature" : "\n    needs \(features.joined(separator: ", "))"
            if !row.missingFeatures.isEmpty {
                line += " — NOT PROVIDED: \(row.missingFeatures.map { URIText.short($0) }.joined(separator: ", "))"
            }
            if !row.problems.isEmpty { line += "\n    BROKEN: \(row.problems.joined(separator: "; "))" }
            print(line)
        }
        print("\(rows.count) plugins, \(rows.filter(\.supported).count) with every required feature provided and a sound description")
    }
}

enum URIText {
    /// `http://lv2plug.in/ns/ext/urid#map` → `urid#map`.
    static func short(_ uri: String) -> String {
        for prefix in ["http://lv2plug.in/ns/ext/", "http://lv2plug.in/ns/lv2core#", "http://lv2plug.in/ns/extensions/"]
        where uri.hasPrefix(prefix) {
            return String(uri.dropFirst(prefix.count))
        }
        return uri
    }
}
