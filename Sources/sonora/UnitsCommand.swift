import ArgumentParser
import Foundation
import SonoraCore
import SonoraPipeline
import SonoraUnits

struct UnitsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "units",
        abstract: "List the audio units Sonora can create, or describe one.",
        discussion: """
            Without a name, lists every unit: its component description
            (type/subtype/manufacturer, Core Audio's codes where Core Audio has the unit),
            name and purpose. With a name, shows its elements and parameters
            (ID, scope, identifier, unit, range, default).

            Examples:
              sonora units
              sonora units MultiChannelMixer
              sonora units auou/genr/appl --json
            """
    )

    @Argument(help: "A unit's name or type/subtype/manufacturer.")
    var name: String?

    @Flag(help: "Print JSON.")
    var json = false

    struct Listing: Codable {
        var component: String
        var name: String
        var summary: String
    }

    struct Detail: Codable {
        struct Parameter: Codable {
            var id: UInt32
            var scope: String
            var identifier: String
            var name: String
            var unit: String
            var min: Float
            var max: Float
            var defaultValue: Float
            var values: [String]?
        }
        var component: String
        var name: String
        var inputs: Int
        var outputs: Int
        var parameters: [Parameter]
    }

    func run() throws {
        _ = PipelineBuilder.nodeKinds  // registers the units of the layers above SonoraUnits (VoiceProcessor)
        let registry = AudioComponentRegistry.shared
        guard let name else {
            let rows = registry.components.map { Listing(component: $0.description.description, name: $0.name, summary: $0.summary) }
            if json { return try printJSON(rows) }
            let width = rows.map(\.name.count).max() ?? 0
            for row in rows {
                print("\(row.component)  \(row.name.padding(toLength: width, withPad: " ", startingAt: 0))  \(row.summary)")
            }
            return
        }
        let unit: AudioUnit
        do {
            unit = try registry.instantiate(named: name)
        } catch {
            throw CLIError("\(error)")
        }
        let parameters = unit.parameterDefinitions.map { definition in
            Detail.Parameter(
                id: definition.id, scope: definition.scope.description, identifier: definition.info.identifier,
                name: definition.info.name, unit: "\(definition.info.unit)", min: definition.info.minValue,
                max: definition.info.maxValue, defaultValue: definition.info.defaultValue,
                values: definition.info.valueStrings.isEmpty ? nil : definition.info.valueStrings)
        }
        let detail = Detail(
            component: unit.componentDescription.description, name: unit.name, inputs: unit.elementCount(.input),
            outputs: unit.elementCount(.output), parameters: parameters)
        if json { return try printJSON(detail) }
        print("\(detail.name) (\(detail.component)): \(detail.inputs) input, \(detail.outputs) output elements")
        for parameter in parameters {
            var line = "  \(parameter.id)\t\(parameter.scope)\t\(parameter.identifier)\t\(parameter.unit)\t\(parameter.min)…\(parameter.max), default \(parameter.defaultValue)"
            if let values = parameter.values { line += " [\(values.joined(separator: ", "))]" }
            print(line)
        }
    }
}

func printJSON<T: Encodable>(_ value: T) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// A failure the CLI reports as one line on stderr with a non-zero exit.
struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
