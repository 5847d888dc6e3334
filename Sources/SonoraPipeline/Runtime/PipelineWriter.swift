import SonoraCore
import SonoraUnits

/// Writes a running pipeline as a config file: its structure as loaded, with each node's
/// present preset and the current value of every writable parameter that differs from
/// its default (so loading the file restores the running state).
enum PipelineWriter {
    static func yaml(for pipeline: BuiltPipeline) -> String {
        let configuration = pipeline.configuration
        var lines: [String] = ["# Saved by sonora from a running pipeline (\(configuration.file)).", "version: \(PipelineConfiguration.formatVersion)"]
        let engine = configuration.engine
        lines += ["engine:", "  sample_rate: \(engine.sampleRate)", "  period: \(engine.periodFrames)", "  periods: \(engine.periods)", "  channels: \(engine.channels)"]
        let device = configuration.device
        lines.append("device:")
        lines.append("  playback: \(quote(device.playback ?? "none"))")
        if let capture = device.capture { lines.append("  capture: \(quote(capture))") }
        if device.fallbackToNull { lines.append("  fallback: null") }
        lines.append("  priority: \(device.priority)")
        if let input = device.inputFile { lines.append("  input: \(quote(input))") }
        if let output = device.outputFile { lines.append("  output: \(quote(output))") }
        if device.voiceProcessing { lines.append("  voice_processing: on") }
        if device.wakesOnTimer {
            lines.append("  wake_up: timer")
            if let headroom = device.headroomMicroseconds { lines.append("  headroom_us: \(headroom)") }
        }
        lines.append("nodes:")
        for spec in configuration.nodes {
            lines.append("  - id: \(quote(spec.id))")
            lines.append("    kind: \(quote(spec.kind))")
            let node = pipeline.node(spec.id)
            // Options in the kind's order, each as its type writes it — as the unit now
            // stands where the kind says how (a source moved over the control socket).
            let kind = spec.nodeKind
            let current = node.flatMap { node in kind?.currentOptions?(spec, node.unit) } ?? spec.options.mapValues(\.value)
            for option in kind?.options ?? [] {
                guard let value = current[option.key] else { continue }
                if case .list(let items) = value {
                    lines.append("    \(option.key):")
                    // Fields in the option's order, one flow mapping per item.
                    let fields = if case .list(let fields) = option.type { fields.map(\.key) } else { [String]() }
                    for item in items {
                        let written = fields.compactMap { key in item[key].map { "\(key): \(yaml($0.value))" } }
                        lines.append("      - {\(written.joined(separator: ", "))}")
                    }
                } else {
                    lines.append("    \(option.key): \(yaml(value))")
                }
            }
            if let channels = spec.channels { lines.append("    channels: \(channels.yaml)") }
            guard let node else { continue }
            if node.unit.isBypassed { lines.append("    bypass: true") }
            if let preset = node.unit.presentPreset { lines.append("    preset: \(quote(preset.name))") }
            var parameters: [String] = []
            for definition in node.unit.parameterDefinitions where definition.info.flags.contains(.isWritable) {
                if kind?.isSavedByOptions?(definition) == true { continue }
                let elements = definition.scope == .global ? 1 : node.unit.elementCount(definition.scope)
                for element in 0..<elements {
                    guard let value = try? node.unit.parameter(definition.id, scope: definition.scope, element: element),
                          value != definition.info.defaultValue else { continue }
                    parameters.append("      - {id: \(definition.id), scope: \(definition.scope), element: \(element), value: \(value)}  # \(definition.info.name)")
                }
            }
            if !parameters.isEmpty { lines.append("    parameters:"); lines += parameters }
        }
        lines.append("connections:")
        for connection in configuration.connections {
            lines.append("  - {from: \(quote("\(connection.from):\(connection.fromBus)")), to: \(quote("\(connection.to):\(connection.toInput)"))}")
        }
        if let socket = configuration.control.socketPath { lines += ["control:", "  socket: \(quote(socket))", "  timeout: \(configuration.control.requestTimeout)"] }
        lines += ["status:", "  interval: \(configuration.status.interval)"]
        if !configuration.status.meters.isEmpty { lines.append("  meters: [\(configuration.status.meters.map(quote).joined(separator: ", "))]") }
        lines += sessionLines(configuration.session)
        if let metrics = configuration.metrics { lines += ["metrics:", "  listen: \(quote(metrics.listen))"] }
        lines += transportLines(configuration.transport)
        return lines.joined(separator: "\n") + "\n"
    }

    /// An option's value as YAML (a list's items are written by the caller).
    static func yaml(_ value: OptionValue) -> String {
        switch value {
        case .boolean, .integer, .number, .point, .list, .integers: "\(value)"
        case .text(let text): quote(text)
        }
    }

    /// A YAML scalar, quoted when it could be read as something else.
    static func quote(_ text: String) -> String {
        let plain = text.range(of: "^[A-Za-z0-9_./:+-][A-Za-z0-9_./:+ -]*$", options: .regularExpression) != nil
            && !["null", "true", "false", "yes", "no", "on", "off", "~"].contains(text.lowercased())
        if plain && !text.hasSuffix(" ") { return text }
        return "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

import Foundation
