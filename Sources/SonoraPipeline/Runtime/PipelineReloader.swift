import Foundation
import SonoraCore
import SonoraUnits

/// Applies a changed config to a running pipeline without stopping the device: changed
/// parameters as ramps, changed presets, and added, removed or rewired nodes through one
/// `AudioGraph.update()` (applied at a cycle boundary, with crossfades); another device (same
/// directions) is switched to live, first, so a device that cannot open refuses the reload
/// with nothing changed. Engine changes, and a device gaining or losing a direction, need a
/// restart and are refused, leaving the pipeline as it was.
struct PipelineReloader {
    let controller: PipelineController

    func apply(_ new: PipelineConfiguration) throws {
        let pipeline = controller.pipeline
        let old = pipeline.configuration
        let top = SourceLocation(file: new.file, line: 1, column: 1)
        if old.engine.sampleRate != new.engine.sampleRate || old.engine.periodFrames != new.engine.periodFrames
            || old.engine.periods != new.engine.periods || old.engine.channels != new.engine.channels
        {
            throw ConfigurationErrors([Diagnostic(new.engine.location ?? top, "engine settings changed; they take effect on restart, not on reload (nothing was changed)")])
        }
        let deviceChanged = old.device.playback != new.device.playback || old.device.capture != new.device.capture
        if deviceChanged && ((old.device.playback == nil) != (new.device.playback == nil) || (old.device.capture == nil) != (new.device.capture == nil)) {
            throw ConfigurationErrors([Diagnostic(new.device.location ?? top, "device gained or lost playback or capture; that takes effect on restart, not on reload (nothing was changed)")])
        }
        if old.device.voiceProcessing != new.device.voiceProcessing {
            throw ConfigurationErrors([Diagnostic(new.device.voiceProcessingLocation ?? new.device.location ?? top, "device.voice_processing changed; it takes effect on restart, not on reload (nothing was changed)")])
        }
        if old.socketPath != new.socketPath {
            throw ConfigurationErrors([Diagnostic(new.control.socketLocation ?? new.control.location ?? top, "control.socket changed; it takes effect on restart, not on reload (nothing was changed)")])
        }
        // The session server (its socket, its policy) is made when the appliance starts.
        if PipelineWriter.sessionLines(old.session) != PipelineWriter.sessionLines(new.session) {
            throw ConfigurationErrors([Diagnostic(new.session?.location ?? top, "session changed; it takes effect on restart, not on reload (nothing was changed)")])
        }
        // The metrics endpoint is bound when the appliance starts.
        if old.metrics?.listen != new.metrics?.listen {
            throw ConfigurationErrors([Diagnostic(new.metrics?.location ?? top, "metrics changed; it takes effect on restart, not on reload (nothing was changed)")])
        }
        if deviceChanged {
            do { try controller.switchDevice(playback: new.device.playback, capture: new.device.capture) } catch {
                throw ConfigurationErrors([Diagnostic(new.device.playbackLocation ?? new.device.location ?? top, "\(error.message) (nothing was changed)")])
            }
        }
        let oldNodes = Dictionary(old.nodes.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let newNodes = Dictionary(new.nodes.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        // A node whose file changed on disk is rebuilt, so its new audio is heard (and said).
        let changedFiles = Dictionary(pipeline.nodes.map { node in (node.id, node.inputFiles.filter { !$0.isCurrent }) }, uniquingKeysWith: { a, _ in a })
        func sameShape(_ a: NodeSpec, _ b: NodeSpec) -> Bool {
            // Values only: a list option's items carry where they were written, and a line
            // moved in the file is no change.
            a.nodeKind?.name == b.nodeKind?.name && a.options.mapValues(\.value.description) == b.options.mapValues(\.value.description)
                && changedFiles[a.id]?.isEmpty != false && a.channels?.yaml == b.channels?.yaml
        }
        let kept = new.nodes.filter { spec in oldNodes[spec.id].map { sameShape($0, spec) } ?? false }.map(\.id)
        let removed = old.nodes.filter { spec in newNodes[spec.id].map { !sameShape(spec, $0) } ?? true }.map(\.id)
        let added = new.nodes.filter { !kept.contains($0.id) }
        let rewired = connectionKeys(old) != connectionKeys(new)
        let graph = pipeline.graph
        let rate = Double(new.engine.sampleRate)

        var nodes = pipeline.nodes.filter { !removed.contains($0.id) }
        var retiredRecorders: [(id: String, recorder: FileRecorderUnit)] = []
        if !removed.isEmpty || !added.isEmpty || rewired {
            // Build the new nodes into the live graph, then wire everything as the new file says.
            for (id, files) in changedFiles where !files.isEmpty && newNodes[id] != nil {
                controller.logger.notice("node '\(id)': \(files.map(\.path).joined(separator: ", ")) changed on disk; reloading it")
            }
            var context = BuildContext(configuration: new, target: .live(controller.device), graph: graph)
            // New nodes take their widths from the kept nodes that feed them, sources first.
            context.keptNodes = nodes
            let addedIDs = Set(added.map(\.id))
            for spec in context.nodesInBuildOrder where addedIDs.contains(spec.id) { context.addNode(spec) }
            if !context.diagnostics.isEmpty { throw ConfigurationErrors(context.diagnostics) }
            for id in removed {
                if let node = pipeline.node(id) {
                    if let recorder = node.unit as? FileRecorderUnit { retiredRecorders.append((id, recorder)) }
                    try graph.removeNode(node.node)
                }
            }
            nodes += context.nodes
            for node in context.nodes {
                for stale in (node.unit as? FileRecorderUnit)?.staleRecordings ?? [] { controller.logger.warning("\(stale)") }
            }
            var byID = Dictionary(nodes.map { ($0.id, $0.node) }, uniquingKeysWith: { a, _ in a })
            byID["output"] = pipeline.headNode
            if let input = graph.nodes.first(where: { graph.name($0) == "input" }) { byID["input"] = input }
            for node in nodes { for input in 0..<node.unit.elementCount(.input) { try graph.disconnect(node.node, input: input) } }
            try graph.disconnect(pipeline.headNode, input: 0)
            for connection in new.connections {
                guard let from = byID[connection.from], let to = byID[connection.to] else {
                    throw ConfigurationErrors([Diagnostic(connection.location, "cannot connect '\(connection.from)' to '\(connection.to)' in a running pipeline")])
                }
                do { try graph.connect(from, bus: connection.fromBus, to: to, input: connection.toInput) } catch {
                    throw ConfigurationErrors([Diagnostic(connection.location, error.message)])
                }
            }
            do { try graph.update() } catch {
                throw ConfigurationErrors([Diagnostic(top, "the running graph refused the change: \(error.message)")])
            }
            for node in context.nodes {
                for parameter in context.parameters[node.id] ?? [] {
                    _ = try? node.unit.setParameter(parameter.id, scope: parameter.scope, element: parameter.element, to: parameter.value)
                }
            }
        }
        // Kept nodes: parameters that changed ramp to their new values; presets; bypass.
        var context = BuildContext(configuration: new, target: .check(offline: false), graph: AudioGraph())
        for id in kept {
            guard let spec = newNodes[id], let node = nodes.first(where: { $0.id == id }) else { continue }
            if let preset = spec.preset, preset.value != oldNodes[id]?.preset?.value,
               let match = node.unit.factoryPresets.first(where: { $0.name.lowercased() == preset.value.lowercased() || "\($0.number)" == preset.value })
            {
                try node.unit.setPresentPreset(match)
            }
            let bypass = spec.bypass?.value.boolean ?? false
            if bypass != node.unit.isBypassed { try node.unit.setBypass(bypass) }
            for setting in spec.parameters {
                guard let parameter = context.resolve(setting, unit: node.unit, node: id) else { continue }
                let current = try node.unit.parameter(parameter.id, scope: parameter.scope, element: parameter.element)
                guard current != parameter.value else { continue }
                let frames = Int((parameter.ramp ?? 0.05) * rate)
                try node.unit.rampParameter(parameter.id, scope: parameter.scope, element: parameter.element, to: parameter.value, duration: frames)
            }
        }
        if !context.diagnostics.isEmpty { throw ConfigurationErrors(context.diagnostics) }
        let replacement = BuiltPipeline(
            configuration: new, graph: graph, nodes: nodes, head: pipeline.head, headNode: pipeline.headNode, io: pipeline.io,
            input: pipeline.input, parameters: pipeline.configuredParameters)
        replacement.retiredRecorderFailures = pipeline.retiredRecorderFailures
        controller.replace(replacement)
        // A removed recorder is finished once the realtime side has let go of it (the
        // update is applied at the next cycle; a few periods later it is retired).
        if !retiredRecorders.isEmpty {
            usleep(UInt32(min(1.0, 4 * Double(new.engine.periodFrames * new.engine.periods) / rate) * 1_000_000))
            for (id, recorder) in retiredRecorders {
                // A failed recording stays reported after its node is gone (status, exit status).
                do { try recorder.finish() } catch {
                    replacement.retiredRecorderFailures.append(RecorderFailure(
                        node: id, file: recorder.path ?? "", message: error.message))
                }
            }
        }
    }

    private func connectionKeys(_ configuration: PipelineConfiguration) -> Set<String> {
        Set(configuration.connections.map { "\($0.from):\($0.fromBus)>\($0.to):\($0.toInput)" })
    }
}
