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
              sonora units tone            # the short names configs use work too
              sonora units auou/genr/appl --json
            """
    )

    @Argument(help: "A unit's name, a config's kind (tone, player, mixer …) or type/subtype/manufacturer.")
    var name: String?

    @Flag(help: "Print JSON.")
    var json = false

    struct Listing: Codable {
        var component: String
        var name: String
        var summary: String
        /// The names a pipeline config may give as `kind` (none for I/O units).
        var kinds: [String]
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
        // The catalog registers the units of the layers above SonoraUnits and knows the short names configs use.
        let catalog = NodeKindCatalog.standard
        let registry = AudioComponentRegistry.shared
        guard let name else {
            let rows = registry.components.map { component in
                Listing(
                    component: component.description.description, name: component.name, summary: component.summary,
                    kinds: catalog.kinds.first { $0.names.contains(component.name) }?.names ?? [])
            }
            if json { return try printJSON(rows) }
            let width = rows.map(\.name.count).max() ?? 0
            for row in rows {
                let short = row.kinds.filter { $0 != row.name }
                let kinds = short.isEmpty ? "" : " (kind: \(short.joined(separator: ", ")))"
                print("\(row.component)  \(row.name.padding(toLength: width, withPad: " ", startingAt: 0))  \(row.summary)\(kinds)")
            }
            return
        }
        let unit: AudioUnit
        do {
            // A config's kind (`tone`, `player`, `mixer` …) names the same unit as its component name.
            if let kind = catalog.kind(named: name), let component = registry.components.first(where: { kind.names.contains($0.name) }) {
                unit = try registry.instantiate(component.description)
            } else {
                unit = try registry.instantiate(named: name)
            }
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
