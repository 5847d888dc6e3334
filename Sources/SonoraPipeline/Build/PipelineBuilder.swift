import Foundation
import SonoraCore
import SonoraFile
import SonoraHAL
import SonoraUnits

/// Turns a parsed config into a graph of units, checking everything that needs the units
/// themselves — options, presets, parameter names, scopes, elements, ranges, files,
/// connections, cycles, formats, nodes that never reach `output`, the device and the
/// control socket — and reporting every problem with its position in one pass.
public enum PipelineBuilder {
    public enum Target {
        /// Ends in an I/O unit on this device.
        case live(any AudioDevice)
        /// Ends in a generic output unit; `input` plays `device.input` (or silence).
        case offline
        /// Validation only, of everything `run` (or, `offline: true`, `render`) would
        /// refuse before touching a device: nothing is created on disk, nothing is opened.
        case check(offline: Bool)

        public static var check: Target { .check(offline: false) }
    }

    /// Checks a config as `sonora run` would use it, without building anything lasting
    /// (`sonora check`; `offline: true` checks it as `sonora render` would).
    public static func check(_ configuration: PipelineConfiguration, offline: Bool = false) -> [Diagnostic] {
        do {
            let pipeline = try build(configuration, target: .check(offline: offline))
            pipeline.graph.uninitialize()
            return []
        } catch {
            return error.diagnostics
        }
    }

    public static func build(_ configuration: PipelineConfiguration, target: Target) throws(ConfigurationErrors) -> BuiltPipeline {
        var context = BuildContext(configuration: configuration, target: target, graph: AudioGraph())
        return try context.build()
    }
}

struct BuildContext {
    let configuration: PipelineConfiguration
    let target: PipelineBuilder.Target
    var diagnostics: [Diagnostic] = []
    let graph: AudioGraph
    var nodes: [PipelineNode] = []
    /// A reload's nodes kept running: sources whose widths new nodes take.
    var keptNodes: [PipelineNode] = []
    var parameters: [String: [ResolvedParameter]] = [:]
    let format: StreamFormat

    init(configuration: PipelineConfiguration, target: PipelineBuilder.Target, graph: AudioGraph) {
        self.configuration = configuration
        self.target = target
        self.graph = graph
        diagnostics = configuration.nodeProblems
        format = .canonical(sampleRate: Double(configuration.engine.sampleRate), channels: configuration.engine.channels)
    }

    var fileLocation: SourceLocation { SourceLocation(file: configuration.file, line: 1, column: 1) }

    var isOffline: Bool {
        switch target {
        case .offline, .check(offline: true): true
        case .live, .check(offline: false): false
        }
    }

    mutating func error(_ location: SourceLocation, _ message: String) { diagnostics.append(Diagnostic(location, message)) }

    mutating func build() throws(ConfigurationErrors) -> BuiltPipeline {
        // Sources first, so each node is made knowing how wide its sources are; listed in file order.
        for spec in nodesInBuildOrder { addNode(spec) }
        let order = Dictionary(configuration.nodes.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { a, _ in a })
        nodes.sort { (order[$0.id] ?? 0) < (order[$1.id] ?? 0) }
        if !isOffline { checkRunOnly() }

        // The head: the I/O unit on the device, or a generic output offline.
        let usesInput = configuration.connections.contains { $0.from == "input" }
        let head: AudioUnit
        var io: IOUnit?
        switch target {
        case .live(let device):
            // With voice processing the head is the VPIO: its canceller's reference is what it
            // sends the device, and it captures (and cancels) whether or not `input` is used.
            let voice = configuration.device.voiceProcessing
            let unit = voice ? VoiceProcessingNode.makeUnit() : IOUnit()
            try? unit.setStreamFormat(format, scope: .input, element: 0)
            try? unit.setStreamFormat(format, scope: .output, element: 1)
            do {
                try unit.setDevice(device)
                let captures = device.format.inputChannels > 0
                if (usesInput || voice) && captures { try unit.setIOEnabled(true, scope: .input, element: IOUnit.inputElement) }
                if voice && !captures { try unit.setIOEnabled(false, scope: .input, element: IOUnit.inputElement) }
            } catch {
                self.error(configuration.device.location ?? fileLocation, error.message)
            }
            io = unit
            head = unit
        case .offline, .check:
            head = GenericOutputUnit()
            try? head.setStreamFormat(format, scope: .input, element: 0)
            try? head.setStreamFormat(format, scope: .output, element: 0)
        }
        let headNode = graph.addNode(head, name: "output")
        var inputNode: AudioGraph.Node?
        var inputUnit: AudioUnit?
        if usesInput {
            let unit: AudioUnit
            if let io {
                unit = io.makeCaptureSource()
            } else {
                let player = FilePlayerUnit()
                try? player.setStreamFormat(format, scope: .output, element: 0)
                if isOffline, let file = configuration.device.inputFile {
                    let path = configuration.resolvedPath(file)
                    if !FileManager.default.isReadableFile(atPath: path) {
                        self.error(configuration.device.location ?? fileLocation, "device.input '\(Diagnostic.excerpt(file))' does not exist or is not readable")
                    } else {
                        do { try player.setFile(path) } catch { self.error(configuration.device.location ?? fileLocation, "device.input: \(error.message)") }
                    }
                }
                unit = player
            }
            try? unit.setStreamFormat(format, scope: .output, element: 0)
            inputNode = graph.addNode(unit, name: "input")
            inputUnit = unit
        }

        connect(headNode: headNode, inputNode: inputNode)
        checkReachability(headNode: headNode)

        attachTransport()
        guard diagnostics.isEmpty else { throw ConfigurationErrors(diagnostics) }
        do {
            try graph.initialize()
        } catch {
            throw ConfigurationErrors([Diagnostic(configuration.device.location ?? fileLocation, "the graph does not initialize: \(error.message)")])
        }
        // Parameters are set once every unit is initialized (their values then reach render).
        for node in nodes {
            for parameter in parameters[node.id] ?? [] {
                _ = try? node.unit.setParameter(parameter.id, scope: parameter.scope, element: parameter.element, to: parameter.value)
            }
        }
        return BuiltPipeline(
            configuration: configuration, graph: graph, nodes: nodes, head: head, headNode: headNode, io: io,
            input: inputUnit, parameters: parameters)
    }

    /// What only a live run needs, checked before any device is touched: `input` needs a
    /// capture device; status meters must name nodes; the control socket's path must be
    /// one the server can take without removing anything but a stale socket.
    mutating func checkRunOnly() {
        checkDevice()
        if configuration.device.capture == nil, let connection = configuration.connections.first(where: { $0.from == "input" }) {
            error(connection.fromLocation, "`input` is the device's capture, but device.capture is not set (offline, `sonora render --input FILE` plays a file there)")
        }
        let ids = configuration.nodes.map(\.id) + (configuration.device.voiceProcessing ? [VoiceProcessingNode.id] : [])
        for (index, name) in configuration.status.meters.enumerated() where !ids.contains(name) {
            let location = index < configuration.status.meterLocations.count ? configuration.status.meterLocations[index] : fileLocation
            error(location, "status.meters: no node '\(Diagnostic.excerpt(name))'\(suggestion(for: name, in: ids))")
        }
        if let path = configuration.socketPath, let problem = ControlSocketPath.problem(for: path) {
            error(configuration.control.socketLocation ?? configuration.control.location ?? fileLocation, "control.socket: \(problem)")
        }
        checkSession()
        checkVoiceProcessing()
    }

    /// The device names, as the HAL's one parser reads them, and — unless `fallback: null`
    /// would run on the null device instead — that ALSA's configuration defines them.
    mutating func checkDevice() {
        let device = configuration.device
        let directions = [("capture", device.capture, device.captureLocation), ("playback", device.playback, device.playbackLocation)]
        var named = true
        for (direction, name, location) in directions {
            guard let name else { continue }
            do { _ = try DeviceSpecifier(parsing: name) } catch {
                self.error(location ?? device.location ?? fileLocation, "device.\(direction): \(error.message)")
                named = false
            }
        }
        guard named, !device.fallbackToNull else { return }
        do {
            try DeviceSpecifier(capture: device.capture, playback: device.playback).checkDefined()
        } catch {
            self.error(device.playbackLocation ?? device.captureLocation ?? device.location ?? fileLocation, "device: \(error.message)")
        }
    }

    mutating func addNode(_ spec: NodeSpec) {
        // The parser reported unknown kinds and options already (`nodeProblems`).
        guard let kind = spec.nodeKind else { return }
        let missing = kind.options.filter { $0.isRequired && spec.options[$0.key] == nil }
        guard missing.isEmpty else {
            for option in missing where !spec.invalidOptions.contains(option.key) {
                error(spec.location, "node '\(spec.id)' (\(kind.name)) needs `\(option.key)`: \(option.documentation)")
            }
            return
        }
        var build = NodeBuild(spec: spec, kind: kind, configuration: configuration, target: target, format: format)
        let upstream = upstreamWidths(of: spec)
        build.inputChannels = upstream
        let unit = kind.make(&build)
        diagnostics += build.diagnostics
        guard let unit else { return }
        configure(unit, kind: kind, spec, upstream: upstream, kindOutputs: build.outputChannels)
        nodes.append(PipelineNode(id: spec.id, kind: kind.name, node: graph.addNode(unit, name: spec.id), unit: unit, inputFiles: build.inputFiles, sources: build.sources))
    }

    /// What every node takes: formats, bypass, preset and parameters.
    mutating func configure(_ unit: AudioUnit, kind: NodeKind, _ spec: NodeSpec, upstream: [Int: Int] = [:], kindOutputs: [Int]? = nil) {
        // Formats: the engine's rate, channels declared or inferred per element (unless the kind keeps its own).
        if kind.usesEngineFormat { applyChannels(unit, kind: kind, spec, upstream: upstream, kindOutputs: kindOutputs) }
        if let bypass = spec.bypass, bypass.value.boolean == true {
            do { try unit.setBypass(true) } catch { self.error(bypass.location, "node '\(spec.id)': \(error.message)") }
        }
        if let preset = spec.preset {
            let presets = unit.factoryPresets
            if let match = presets.first(where: { $0.name.lowercased() == preset.value.lowercased() || "\($0.number)" == preset.value }) {
                do { try unit.setPresentPreset(match) } catch { self.error(preset.location, error.message) }
            } else if presets.isEmpty {
                error(preset.location, "node '\(spec.id)': \(kind.name) has no presets")
            } else {
                error(preset.location, "node '\(spec.id)': no preset '\(Diagnostic.excerpt(preset.value))'\(suggestion(for: preset.value, in: presets.map(\.name))) (presets: \(presets.map(\.name).joined(separator: ", ")))")
            }
        }
        var resolved: [ResolvedParameter] = []
        for setting in spec.parameters {
            if let parameter = resolve(setting, unit: unit, node: spec.id) { resolved.append(parameter) }
        }
        parameters[spec.id] = resolved
    }

    /// Finds the parameter a setting names and converts its value.
    mutating func resolve(_ setting: ParameterSetting, unit: AudioUnit, node: String) -> ResolvedParameter? {
        let definitions = unit.parameterDefinitions
        func normalized(_ text: String) -> String { text.lowercased().filter { $0.isLetter || $0.isNumber } }
        var matches: [AudioUnitParameterDefinition]
        let label: String
        switch setting.address {
        case .name(let name):
            label = "'\(Diagnostic.excerpt(name))'"
            matches = definitions.filter { normalized($0.info.name) == normalized(name) || normalized($0.info.identifier) == normalized(name) }
            if matches.isEmpty {
                let names = Array(Set(definitions.map(\.info.name))).sorted()
                error(setting.location, "node '\(node)' (\(unit.name)) has no parameter \(label)\(suggestion(for: name, in: names))\(names.isEmpty ? "; it has no parameters" : " (parameters: \(names.joined(separator: ", ")))")")
                return nil
            }
        case .id(let id):
            label = "\(id)"
            matches = definitions.filter { $0.id == id }
            if matches.isEmpty {
                error(setting.location, "node '\(node)' (\(unit.name)) has no parameter \(id) (IDs: \(definitions.map { "\($0.id)" }.joined(separator: ", ")))")
                return nil
            }
        }
        if let scopeText = setting.scope {
            let scope = AudioUnitScope.allCases.first { $0.description == scopeText } ?? .global
            matches = matches.filter { $0.scope == scope }
            guard !matches.isEmpty else {
                error(setting.location, "node '\(node)': parameter \(label) does not live in the \(scopeText) scope")
                return nil
            }
        }
        guard let definition = matches.first else { return nil }
        let element = setting.element ?? 0
        let elements = definition.scope == .global ? 1 : unit.elementCount(definition.scope)
        guard element < elements else {
            error(setting.location, "node '\(node)': element \(element) out of range; \(unit.name)'s \(definition.scope) scope has \(elements) element\(elements == 1 ? "" : "s")")
            return nil
        }
        guard definition.info.flags.contains(.isWritable) else {
            error(setting.location, "node '\(node)': parameter \(label) is read-only (a meter)")
            return nil
        }
        switch ParameterValue.parse(setting.value, for: definition.info, sampleRate: format.sampleRate) {
        case .success(let value):
            return ResolvedParameter(id: definition.id, scope: definition.scope, element: element, value: value, ramp: setting.ramp)
        case .failure(let problem):
            error(setting.valueLocation, "node '\(node)': \(problem.message)")
            return nil
        }
    }

    mutating func connect(headNode: AudioGraph.Node, inputNode: AudioGraph.Node?) {
        let byID = Dictionary(nodes.map { ($0.id, $0.node) }, uniquingKeysWith: { first, _ in first })
        let ids = nodes.map(\.id) + ["input", "output"]
        // Nodes the config names but that could not be built were reported already.
        let failed = Set(configuration.nodes.map(\.id)).subtracting(nodes.map(\.id))
        var outputFed = false
        var taken: [String: SourceLocation] = [:]
        for connection in configuration.connections {
            var source: AudioGraph.Node?
            var destination: AudioGraph.Node?
            for (end, location) in [(connection.from, connection.fromLocation), (connection.to, connection.toLocation)]
            where end == VoiceProcessingNode.id && !byID.keys.contains(end) {
                error(location, VoiceProcessingNode.connectionMessage(voiceProcessing: configuration.device.voiceProcessing))
            }
            if connection.from == VoiceProcessingNode.id || connection.to == VoiceProcessingNode.id { continue }
            if connection.from == "output" {
                error(connection.fromLocation, "`output` is the device's playback: it can only be connected to")
            } else if connection.from == "input" {
                source = inputNode
            } else if let node = byID[connection.from] {
                source = node
            } else if !failed.contains(connection.from) {
                error(connection.fromLocation, "no node '\(Diagnostic.excerpt(connection.from))'\(suggestion(for: connection.from, in: ids))")
            }
            if connection.to == "input" {
                error(connection.toLocation, "`input` is the device's capture: it can only be connected from")
            } else if connection.to == "output" {
                destination = headNode
                outputFed = true
            } else if let node = byID[connection.to] {
                destination = node
            } else if !failed.contains(connection.to) {
                error(connection.toLocation, "no node '\(Diagnostic.excerpt(connection.to))'\(suggestion(for: connection.to, in: ids))")
            }
            guard let source, let destination else { continue }
            let key = "\(connection.to):\(connection.toInput)"
            if let first = taken[key] {
                error(connection.toLocation, "'\(key)' is already fed by the connection at \(first.line):\(first.column); an input takes one source (use a mixer)")
                continue
            }
            taken[key] = connection.location
            guard checkWidths(connection, from: source, to: destination) else { continue }
            do {
                try graph.connect(source, bus: connection.fromBus, to: destination, input: connection.toInput)
                // Formats are known now; checked here so the error points at the connection.
                try graph.checkFormats(source, bus: connection.fromBus, to: destination, input: connection.toInput)
            } catch {
                self.error(connection.location, error.message)
            }
        }
        if !outputFed { error(fileLocation, "nothing is connected to `output`: add a connection `to: output`") }
    }

    /// Every node must reach `output`; otherwise it would never be rendered.
    mutating func checkReachability(headNode: AudioGraph.Node) {
        var reaching: Set<String> = ["output"]
        var changed = true
        while changed {
            changed = false
            for connection in configuration.connections where reaching.contains(connection.to) && !reaching.contains(connection.from) {
                reaching.insert(connection.from)
                changed = true
            }
        }
        for spec in configuration.nodes where !reaching.contains(spec.id) && nodes.contains(where: { $0.id == spec.id }) {
            error(spec.location, "node '\(spec.id)' does not reach `output`, so it would never run; connect it or remove it")
        }
    }
}
