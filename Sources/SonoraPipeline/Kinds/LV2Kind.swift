import SonoraLV2
import SonoraUnits

extension NodeKind {
    /// Any installed LV2 plugin, by URI; its main buses must have the engine's channel count.
    public static let lv2 = NodeKind(
        name: "lv2",
        summary: "an installed LV2 plugin (`sonora plugins` lists them); parameters by port symbol or name, presets by label",
        options: [NodeOption("uri", .uri, required: true, "the plugin's URI (`sonora plugins` lists them)")],
        usesEngineFormat: false
    ) { build in
        guard let uri = build.option("uri"), let text = uri.value.text else { return nil }
        // The worker runs on a thread when live and inline offline, so renders are deterministic.
        let options = LV2Unit.Options(
            sampleRate: build.format.sampleRate, maximumFrames: max(4096, build.configuration.engine.periodFrames),
            workerMode: build.isLive ? .thread : .inline)
        let plugin: LV2Unit
        do {
            plugin = try LV2Unit(uri: text, options: options)
        } catch {
            build.error(at: "uri", error)
            return nil
        }
        let channels = build.configuration.engine.channels
        // The main buses run at the engine's channel count; others (sidechains, CV) keep the
        // plugin's and are silent unless connected from a node of that width.
        for (scope, buses) in [("input", plugin.layout.inputs), ("output", plugin.layout.outputs)] {
            for (element, bus) in buses.prefix(1).enumerated() where bus.ports.count != channels {
                build.error(at: "uri", "\(plugin.plugin.name) has \(bus.ports.count) channel\(bus.ports.count == 1 ? "" : "s") on \(scope) \(element) (\(bus.name)); the engine runs \(channels) — use a \(channels)-channel plugin or set engine.channels")
                return nil
            }
        }
        return plugin
    }
}
