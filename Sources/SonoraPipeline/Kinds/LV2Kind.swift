import SonoraLV2
import SonoraUnits

extension NodeKind {
    /// Any installed LV2 plugin, by URI; a plugin narrower than its input runs as linked instances.
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
        // The main input runs as wide as its source (or as declared); a plugin narrower than
        // that whose input and output are alike runs as linked instances (dual mono …).
        guard let mainInput = plugin.layout.inputs.first?.ports.count else { return plugin }
        let width = build.inputWidth(0)
        if width == mainInput { return plugin }
        let mainOutput = plugin.layout.outputs.first?.ports.count ?? 0
        func channels(_ count: Int) -> String { "\(count) channel\(count == 1 ? "" : "s")" }
        guard plugin.layout.inputs.count == 1, plugin.layout.outputs.count == 1, mainOutput == mainInput, width % mainInput == 0 else {
            build.error(
                at: "uri",
                "\(plugin.plugin.name) takes \(channels(mainInput)) on input 0 (\(plugin.layout.inputs[0].name)) and gives \(channels(mainOutput)); its input runs at \(channels(width)), which linked instances cannot fill — place a channel_map before it (or use a \(width)-channel plugin)")
            return nil
        }
        do {
            return try LV2LinkedUnit(uri: text, instances: width / mainInput, options: options)
        } catch {
            build.error(at: "uri", error)
            return nil
        }
    }
}
