import Foundation
import SonoraCore
import SonoraFile
import SonoraHAL
import SonoraLV2
import SonoraUnits
import SonoraVoice

/// Turns a parsed config into a graph of units, checking everything that needs the units
/// themselves — node kinds, options, presets, parameter names, scopes, elements, ranges,
/// files, connections, cycles, formats, nodes that never reach `output` — and reporting
/// every problem with its position in one pass.
public enum PipelineBuilder {
    /// Short names for the built-in units a config may use as `kind`.
    public static let aliases: [String: String] = [
        "player": "FilePlayer", "recorder": "FileRecorder", "mixer": "MultiChannelMixer", "tone": "ToneGenerator",
        "eq": "GraphicEQ", "peq": "ParametricEQ", "delay": "SampleDelay", "voice": "VoiceProcessor",
    ]

    /// Units of layers above SonoraUnits, registered once so configs can name them.
    static let registerHigherUnits: Void = {
        AudioComponentRegistry.shared.register(
            VoiceProcessorUnit.componentDescription, "VoiceProcessor",
            "echo cancellation and suppression: microphone on input 0, loudspeaker reference on input 1") { VoiceProcessorUnit() }
        AudioComponentRegistry.shared.register(
            VoiceProcessingIOUnit.voiceProcessingDescription, "VoiceProcessingIO",
            "I/O unit with echo cancellation: plays element 0, captures element 1 cancelled against what it played") { VoiceProcessingIOUnit() }
    }()

    /// Kind-specific options (besides id, kind, parameters, preset, bypass, comment).
    static let kindOptions: [String: [String]] = [
        "FilePlayer": ["file", "loop"], "FileRecorder": ["file"], "MultiChannelMixer": ["inputs"], "lv2": ["uri"],
    ]

    /// Components a node may be (not output units, not the capture source).
    public static var nodeKinds: [String] {
        registerHigherUnits
        return AudioComponentRegistry.shared.components
            .filter { $0.description.type != .outputUnit }
            .map(\.name) + aliases.keys.sorted() + ["lv2"]
    }

    public enum Target {
        /// Ends in an I/O unit on this device.
        case live(any AudioDevice)
        /// Ends in a generic output unit; `input` plays `device.input` (or silence).
        case offline
        /// Validation only: nothing is created on disk, nothing is opened.
        case check
    }

    /// Checks a config without building anything lasting (`sonora check`).
    public static func check(_ configuration: PipelineConfiguration) -> [Diagnostic] {
        do {
            let pipeline = try build(configuration, target: .check)
            pipeline.graph.uninitialize()
            return []
        } catch {
            return error.diagnostics
        }
    }

    public static func build(_ configuration: PipelineConfiguration, target: Target) throws(ConfigurationErrors) -> BuiltPipeline {
        registerHigherUnits
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
    var parameters: [String: [ResolvedParameter]] = [:]
    let format: StreamFormat

    init(configuration: PipelineConfiguration, target: PipelineBuilder.Target, graph: AudioGraph) {
        self.configuration = configuration
        self.target = target
        self.graph = graph
        format = .canonical(sampleRate: Double(configuration.engine.sampleRate), channels: configuration.engine.channels)
    }

    var fileLocation: SourceLocation { SourceLocation(file: configuration.file, line: 1, column: 1) }

    mutating func error(_ location: SourceLocation, _ message: String) { diagnostics.append(Diagnostic(location, message)) }

    /// A path relative to the config file's folder (absolute, `..` resolved).
    func resolvePath(_ path: String) -> String {
        if path.hasPrefix("/") { return (path as NSString).standardizingPath }
        var config = configuration.file
        if !config.hasPrefix("/") { config = FileManager.default.currentDirectoryPath + "/" + config }
        let folder = (config as NSString).deletingLastPathComponent
        return ((folder as NSString).appendingPathComponent(path) as NSString).standardizingPath
    }

    mutating func build() throws(ConfigurationErrors) -> BuiltPipeline {
        for spec in configuration.nodes { addNode(spec) }

        // The head: the I/O unit on the device, or a generic output offline.
        let usesInput = configuration.connections.contains { $0.from == "input" }
        let head: AudioUnit
        var io: IOUnit?
        switch target {
        case .live(let device):
            let unit = IOUnit()
            try? unit.setStreamFormat(format, scope: .input, element: 0)
            try? unit.setStreamFormat(format, scope: .output, element: 1)
            do {
                try unit.setDevice(device)
                if usesInput { try unit.setIOEnabled(true, scope: .input, element: IOUnit.inputElement) }
            } catch {
                self.error(configuration.device.location ?? fileLocation, error.message)
            }
            if usesInput && device.format.inputChannels == 0, let connection = configuration.connections.first(where: { $0.from == "input" }) {
                self.error(connection.fromLocation, "`input` is the device's capture, but device.capture is not set")
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
                if let file = configuration.device.inputFile {
                    let path = resolvePath(file)
                    if !FileManager.default.isReadableFile(atPath: path) {
                        self.error(configuration.device.location ?? fileLocation, "device.input '\(file)' does not exist or is not readable")
                    } else {
                        do { try player.setFile(path) } catch { self.error(configuration.device.location ?? fileLocation, error.message) }
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

    /// An LV2 plugin by URI, its buses at the engine's channel count.
    mutating func makePlugin(_ spec: NodeSpec) -> AudioUnit? {
        guard let uri = spec.options["uri"] else {
            error(spec.location, "node '\(spec.id)' (lv2) needs `uri` (`sonora plugins` lists them)")
            return nil
        }
        let mode: LV2Worker.Mode
        switch target {
        case .live: mode = .thread
        case .offline, .check: mode = .inline  // deterministic renders
        }
        let options = LV2Unit.Options(
            sampleRate: format.sampleRate, maximumFrames: max(4096, configuration.engine.periodFrames), workerMode: mode)
        let plugin: LV2Unit
        do {
            plugin = try LV2Unit(uri: uri.value, options: options)
        } catch {
            self.error(uri.location, "node '\(spec.id)': \(error.message)")
            return nil
        }
        let channels = configuration.engine.channels
        // The main buses must run at the engine's channel count; others (sidechains, CV)
        // keep the plugin's and are silent unless connected from a node of that width.
        for (scope, buses) in [("input", plugin.layout.inputs), ("output", plugin.layout.outputs)] {
            for (element, bus) in buses.prefix(1).enumerated() where bus.ports.count != channels {
                error(uri.location, "node '\(spec.id)': \(plugin.plugin.name) has \(bus.ports.count) channel\(bus.ports.count == 1 ? "" : "s") on \(scope) \(element) (\(bus.name)); the engine runs \(channels) — use a \(channels)-channel plugin or set engine.channels")
                return nil
            }
        }
        return plugin
    }

    mutating func addNode(_ spec: NodeSpec) {
        if spec.kind.lowercased() == "lv2" {
            guard let unit = makePlugin(spec) else { return }
            addConfigured(unit, kind: "lv2", spec)
            return
        }
        let kindName = PipelineBuilder.aliases[spec.kind.lowercased()] ?? spec.kind
        guard let component = AudioComponentRegistry.shared.components.first(where: {
            $0.name.lowercased() == kindName.lowercased() && $0.description.type != .outputUnit
        }) else {
            error(spec.kindLocation, "node '\(spec.id)': unknown kind '\(spec.kind)'\(suggestion(for: spec.kind, in: PipelineBuilder.nodeKinds)) (`sonora units` lists them)")
            return
        }
        let unit: AudioUnit
        do { unit = try AudioComponentRegistry.shared.instantiate(component.description) } catch {
            self.error(spec.kindLocation, "node '\(spec.id)': \(error.message)")
            return
        }
        addConfigured(unit, kind: component.name, spec)
    }

    /// Options, formats, files, bypass, preset and parameters of a node's unit; adds it.
    mutating func addConfigured(_ unit: AudioUnit, kind: String, _ spec: NodeSpec) {
        // Options.
        let allowed = (PipelineBuilder.kindOptions[kind] ?? []) + ["bypass"]
        for (key, option) in spec.options.sorted(by: { $0.key < $1.key }) where !allowed.contains(key) {
            error(option.location, "node '\(spec.id)': `\(key)` does not apply to \(kind)\(allowed.count > 1 ? " (it takes \(allowed.joined(separator: ", ")))" : "")")
        }
        if let inputs = spec.options["inputs"], kind == "MultiChannelMixer" {
            if let count = Int(inputs.value), (1...64).contains(count) {
                do { try unit.setElementCount(count, scope: .input) } catch { self.error(inputs.location, error.message) }
            } else {
                error(inputs.location, "node '\(spec.id)': inputs must be a whole number in 1…64, not '\(inputs.value)'")
            }
        }
        // Formats: the engine's on every element (an LV2 plugin keeps its buses' own).
        for scope in kind == "lv2" ? [] : [AudioUnitScope.input, .output] {
            for element in 0..<unit.elementCount(scope) {
                do { try unit.setStreamFormat(format, scope: scope, element: element) } catch {
                    self.error(spec.location, "node '\(spec.id)' (\(kind)) does not take \(format) on \(scope) \(element): \(error.message)")
                }
            }
        }
        if kind == "FilePlayer" { configurePlayer(unit as! FilePlayerUnit, spec) }
        if kind == "FileRecorder" { configureRecorder(unit as! FileRecorderUnit, spec) }
        if let bypass = spec.options["bypass"] {
            switch bypass.value.lowercased() {
            case "true", "on", "yes": do { try unit.setBypass(true) } catch { self.error(bypass.location, error.message) }
            case "false", "off", "no": break
            default: error(bypass.location, "node '\(spec.id)': bypass must be true or false")
            }
        }
        if let preset = spec.preset {
            let presets = unit.factoryPresets
            if let match = presets.first(where: { $0.name.lowercased() == preset.value.lowercased() || "\($0.number)" == preset.value }) {
                do { try unit.setPresentPreset(match) } catch { self.error(preset.location, error.message) }
            } else if presets.isEmpty {
                error(preset.location, "node '\(spec.id)': \(kind) has no presets")
            } else {
                error(preset.location, "node '\(spec.id)': no preset '\(preset.value)'\(suggestion(for: preset.value, in: presets.map(\.name))) (presets: \(presets.map(\.name).joined(separator: ", ")))")
            }
        }
        var resolved: [ResolvedParameter] = []
        for setting in spec.parameters {
            if let parameter = resolve(setting, unit: unit, node: spec.id) { resolved.append(parameter) }
        }
        parameters[spec.id] = resolved
        nodes.append(PipelineNode(id: spec.id, kind: kind, node: graph.addNode(unit, name: spec.id), unit: unit))
    }

    mutating func configurePlayer(_ player: FilePlayerUnit, _ spec: NodeSpec) {
        guard let file = spec.options["file"] else { error(spec.location, "node '\(spec.id)' (player) needs `file`"); return }
        let path = resolvePath(file.value)
        guard FileManager.default.isReadableFile(atPath: path) else {
            error(file.location, "node '\(spec.id)': file '\(file.value)' does not exist or is not readable")
            return
        }
        if let loop = spec.options["loop"] {
            switch loop.value.lowercased() {
            case "true", "yes", "on": player.loops = true
            case "false", "no", "off": player.loops = false
            default: error(loop.location, "node '\(spec.id)': loop must be true or false")
            }
        }
        do { try player.setFile(path) } catch { self.error(file.location, "node '\(spec.id)': \(error.message)") }
    }

    mutating func configureRecorder(_ recorder: FileRecorderUnit, _ spec: NodeSpec) {
        guard let file = spec.options["file"] else { error(spec.location, "node '\(spec.id)' (recorder) needs `file`"); return }
        let path = resolvePath(file.value)
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            error(file.location, "node '\(spec.id)': folder '\(folder)' for '\(file.value)' does not exist")
            return
        }
        guard FileManager.default.isWritableFile(atPath: folder) else {
            error(file.location, "node '\(spec.id)': cannot write into '\(folder)'")
            return
        }
        if case .check = target {
            if AudioFileType(pathExtension: URL(fileURLWithPath: path).pathExtension) == nil {
                error(file.location, "node '\(spec.id)': cannot tell the file type of '\(file.value)' (use .wav, .aif, .caf, .flac)")
            }
            return
        }
        do { try recorder.setFile(path) } catch { self.error(file.location, "node '\(spec.id)': \(error.message)") }
    }

    /// Finds the parameter a setting names and converts its value.
    mutating func resolve(_ setting: ParameterSetting, unit: AudioUnit, node: String) -> ResolvedParameter? {
        let definitions = unit.parameterDefinitions
        func normalized(_ text: String) -> String { text.lowercased().filter { $0.isLetter || $0.isNumber } }
        var matches: [AudioUnitParameterDefinition]
        let label: String
        switch setting.address {
        case .name(let name):
            label = "'\(name)'"
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
            if connection.from == "output" {
                error(connection.fromLocation, "`output` is the device's playback: it can only be connected to")
            } else if connection.from == "input" {
                source = inputNode
            } else if let node = byID[connection.from] {
                source = node
            } else if !failed.contains(connection.from) {
                error(connection.fromLocation, "no node '\(connection.from)'\(suggestion(for: connection.from, in: ids))")
            }
            if connection.to == "input" {
                error(connection.toLocation, "`input` is the device's capture: it can only be connected from")
            } else if connection.to == "output" {
                destination = headNode
                outputFed = true
            } else if let node = byID[connection.to] {
                destination = node
            } else if !failed.contains(connection.to) {
                error(connection.toLocation, "no node '\(connection.to)'\(suggestion(for: connection.to, in: ids))")
            }
            guard let source, let destination else { continue }
            let key = "\(connection.to):\(connection.toInput)"
            if let first = taken[key] {
                error(connection.toLocation, "'\(key)' is already fed by the connection at \(first.line):\(first.column); an input takes one source (use a mixer)")
                continue
            }
            taken[key] = connection.location
            do {
                try graph.connect(source, bus: connection.fromBus, to: destination, input: connection.toInput)
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
