import ArgumentParser
import Foundation
import SonoraCore
import SonoraLV2

/// Writes a plugin's state — after an optional preset and -c values — as a Turtle preset bundle.
struct PluginSavePresetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "save-preset",
        abstract: "Save an LV2 plugin's state (port values and state-interface properties) as a Turtle preset bundle.",
        discussion: """
            The plugin is instantiated, the --preset (if any) and the -c SYMBOL=VALUE
            controls are applied, and its state is written with lilv into BUNDLE_DIR
            (manifest.ttl and LABEL.ttl). Put the bundle's parent on LV2_PATH to see it
            among the plugin's presets. An existing LABEL.ttl is replaced only with
            --overwrite (manifest.ttl gains an entry; other presets in it are kept).

            Examples:
              sonora plugins save-preset URI ~/.lv2/quiet.lv2 -c gain=-6 --label Quiet
              LV2_PATH=~/.lv2:/usr/lib/lv2 sonora plugins info URI
            """
    )

    @Argument(help: "The plugin's URI.")
    var uri: String

    @Argument(help: "The preset bundle directory to write (made if missing).")
    var bundle: String

    @Option(name: .customShort("c"), help: "A control as SYMBOL=VALUE (repeatable).")
    var controls: [String] = []

    @Option(help: "A preset to start from (its label or URI).")
    var preset: String?

    @Option(help: "The preset's label.")
    var label = "Sonora preset"

    @Option(help: "The preset's URI (default: the file URI of LABEL.ttl in the bundle).")
    var presetURI: String?

    @Flag(help: "Replace the bundle's LABEL.ttl if it exists.")
    var overwrite = false

    func run() throws {
        let presetFile = (bundle as NSString).appendingPathComponent(LV2Unit.presetFileName(label: label))
        try OutputFile.check(presetFile, inputs: [], overwrite: overwrite)
        do {
            let unit = try LV2Unit(uri: uri, options: .init(workerMode: .inline))
            if let preset { try unit.applyPreset(named: preset) }
            for control in controls {
                let parts = control.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, let value = Float(parts[1]), value.isFinite else {
                    throw CLIError("-c \(control): expected SYMBOL=VALUE with a number")
                }
                try unit.setControl(parts[0], to: value)
            }
            let written = try unit.savePreset(label: label, directory: bundle, uri: presetURI)
            print("saved \(label) <\(written)> in \(bundle)")
        } catch let error as AudioError {
            throw CLIError("\(error)")
        }
    }
}
