import Foundation
import SonoraLV2
import Yams

/// Reads a pipeline config (YAML) into a `PipelineConfiguration`, collecting every
/// problem of form — unknown keys, wrong types, missing keys, unknown node kinds and
/// options, bad connection syntax — with its position. Checks that need the units
/// (parameter names, ranges, elements, files) are the builder's.
public enum ConfigurationParser {
    static let topKeys = ["version", "engine", "device", "nodes", "connections", "control", "status", "session", "metrics", "transport"]
    static let engineKeys = ["sample_rate", "period", "periods", "channels"]
    static let deviceKeys = ["playback", "capture", "fallback", "priority", "input", "output", "voice_processing", "wake_up", "headroom_us"]
    static let parameterKeys = ["name", "id", "scope", "element", "value", "ramp"]
    static let controlKeys = ["socket", "timeout"]
    static let statusKeys = ["interval", "meters"]
    /// Node ids are names, not data: long ones are refused before any work is done on them.
    static let maximumIDLength = 64

    public static func parse(contentsOf path: String) throws(ConfigurationErrors) -> PipelineConfiguration {
        let start = SourceLocation(file: path, line: 1, column: 1)
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw ConfigurationErrors([Diagnostic(start, "no such file")])
        }
        guard !isFolder.boolValue else { throw ConfigurationErrors([Diagnostic(start, "is a folder, not a config file")]) }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationErrors([Diagnostic(start, "cannot read the file (not readable)")])
        }
        if let problem = TextProblem.find(in: data) {
            throw ConfigurationErrors([Diagnostic(SourceLocation(file: path, line: problem.line, column: problem.column), problem.message)])
        }
        return try parse(String(decoding: data, as: UTF8.self), file: path)
    }

    public static func parse(_ text: String, file: String) throws(ConfigurationErrors) -> PipelineConfiguration {
        var parser = Walker(file: file)
        if let problem = TextProblem.find(in: Data(text.utf8)) {
            throw ConfigurationErrors([Diagnostic(SourceLocation(file: file, line: problem.line, column: problem.column), problem.message)])
        }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw ConfigurationErrors([parser.diagnostic(for: error)])
        } catch {
            throw ConfigurationErrors([Diagnostic(SourceLocation(file: file, line: 1, column: 1), "YAML: \(Diagnostic.excerpt("\(error)"))")])
        }
        guard let root else {
            throw ConfigurationErrors([Diagnostic(SourceLocation(file: file, line: 1, column: 1), "the file is empty; a pipeline needs at least `nodes` and `connections`")])
        }
        var configuration = parser.pipeline(root)
        guard parser.diagnostics.isEmpty else { throw ConfigurationErrors(parser.diagnostics + parser.nodeProblems) }
        configuration.nodeProblems = parser.nodeProblems
        return configuration
    }

    struct Walker {
        let file: String
        var diagnostics: [Diagnostic] = []
        let catalog = NodeKindCatalog.standard

        init(file: String) { self.file = file }

        func location(_ node: Node) -> SourceLocation {
            SourceLocation(file: file, line: node.mark?.line ?? 1, column: node.mark?.column ?? 1)
        }

        func location(_ mark: Mark) -> SourceLocation { SourceLocation(file: file, line: mark.line, column: mark.column) }

        mutating func error(_ node: Node, _ message: String) { diagnostics.append(Diagnostic(location(node), message)) }

        /// libyaml notices an unclosed `{`, `[` or quote, or a missing `:`, where the text
        /// stops making sense — often lines later; its context mark is where the construct
        /// opened, which is where the mistake is.
        func diagnostic(for error: YamlError) -> Diagnostic {
            switch error {
            case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _), .composer(let context, let problem, let mark, _):
                guard let context else { return Diagnostic(location(mark), "YAML syntax: \(problem)") }
                let opened = location(context.mark)
                let what: String
                switch context.text {
                case "while parsing a flow mapping": what = "this '{' is not closed with '}' (or a ',' is missing between its entries)"
                case "while parsing a flow sequence": what = "this '[' is not closed with ']' (or a ',' is missing between its entries)"
                case "while scanning a quoted scalar": what = "this quote is not closed"
                case "while scanning a simple key": what = "this key has no ':' after it"
                default:
                    // In a block the problem mark is the better place (a line indented wrong).
                    return Diagnostic(location(mark), "YAML syntax: \(problem) (\(context.text) that starts at \(context.mark.line):\(context.mark.column))")
                }
                return Diagnostic(opened, "YAML syntax: \(what); noticed at \(mark.line):\(mark.column): \(problem)")
            case .reader(let problem, _, let value, _):
                return Diagnostic(SourceLocation(file: file, line: 1, column: 1), "YAML: \(problem) (character \(value))")
            case .duplicatedKeysInMapping(let duplicates, let context):
                let keys = duplicates.map { "'\(Diagnostic.excerpt($0))'" }.joined(separator: ", ")
                return Diagnostic(location(context.mark), "\(keys) appear\(duplicates.count == 1 ? "s" : "") more than once in the same mapping; keep one")
            default:
                return Diagnostic(SourceLocation(file: file, line: 1, column: 1), "YAML: \(Diagnostic.excerpt("\(error)"))")
            }
        }

        /// The pairs of a mapping with string keys; reports unknown keys and duplicates.
        mutating func pairs(_ node: Node, what: String, allowed: [String]) -> [(key: String, keyNode: Node, value: Node)] {
            pairs(node, what: what, allowed: allowed) { name in
                "unknown key '\(Diagnostic.excerpt(name))' in \(what)\(suggestion(for: name, in: allowed)) (allowed: \(allowed.joined(separator: ", ")))"
            }
        }

        mutating func pairs(
            _ node: Node, what: String, allowed: [String], unknown: (String) -> String
        ) -> [(key: String, keyNode: Node, value: Node)] {
            guard let mapping = node.mapping else {
                error(node, "\(what) must be a mapping (key: value lines)")
                return []
            }
            var seen: Set<String> = []
            var result: [(String, Node, Node)] = []
            for (key, value) in mapping {
                guard let name = key.scalar?.string else { error(key, "\(what): keys must be plain words"); continue }
                guard allowed.contains(name) else {
                    error(key, unknown(name))
                    continue
                }
                guard seen.insert(name).inserted else { error(key, "'\(name)' appears twice in \(what)"); continue }
                result.append((name, key, value))
            }
            return result
        }

        mutating func string(_ node: Node, _ what: String) -> String? {
            guard let scalar = node.scalar else { error(node, "\(what) must be a single value, not a list or mapping"); return nil }
            return scalar.string
        }

        mutating func integer(_ node: Node, _ what: String, in range: ClosedRange<Int>) -> Int? {
            guard let text = string(node, what) else { return nil }
            guard let value = Int(text.trimmingCharacters(in: .whitespaces)) else {
                error(node, "\(what) must be a whole number, not '\(Diagnostic.excerpt(text))'")
                return nil
            }
            guard range.contains(value) else { error(node, "\(what) \(value) is out of range \(range.lowerBound)…\(range.upperBound)"); return nil }
            return value
        }

        mutating func number(_ node: Node, _ what: String, in range: ClosedRange<Double>) -> Double? {
            guard let text = string(node, what) else { return nil }
            guard let value = Double(text.trimmingCharacters(in: .whitespaces)), value.isFinite else {
                error(node, "\(what) must be a number, not '\(Diagnostic.excerpt(text))'")
                return nil
            }
            guard range.contains(value) else { error(node, "\(what) \(value) is out of range \(range.lowerBound)…\(range.upperBound)"); return nil }
            return value
        }

        mutating func boolean(_ node: Node, _ what: String) -> Bool? {
            guard let text = string(node, what)?.lowercased() else { return nil }
            switch text {
            case "true", "yes", "on", "1": return true
            case "false", "no", "off", "0": return false
            default: error(node, "\(what) must be true or false, not '\(Diagnostic.excerpt(text))'"); return nil
            }
        }

        mutating func pipeline(_ root: Node) -> PipelineConfiguration {
            var configuration = PipelineConfiguration(file: file)
            var sawNodes = false, sawConnections = false
            for (key, keyNode, value) in pairs(root, what: "the pipeline", allowed: ConfigurationParser.topKeys) {
                switch key {
                case "version":
                    let supported = PipelineConfiguration.formatVersion
                    if let version = integer(value, "version", in: 1...Int(Int32.max)) {
                        if version == supported { configuration.version = version }
                        else { error(value, "config format version \(version) is not supported by this Sonora (it reads version \(supported))") }
                    }
                case "engine": configuration.engine = engine(value)
                case "device": configuration.device = device(value)
                case "nodes":
                    sawNodes = true
                    configuration.nodes = nodes(value)
                case "connections":
                    sawConnections = true
                    configuration.connections = connections(value)
                case "control": configuration.control = control(value)
                case "status": configuration.status = status(value)
                case "session": configuration.session = session(value)
                case "metrics": configuration.metrics = metrics(value)
                case "transport": configuration.transport = transport(value)
                default: error(keyNode, "unknown key '\(key)'")
                }
            }
            if !sawNodes { error(root, "missing `nodes`: a pipeline needs at least one node") }
            if !sawConnections { error(root, "missing `connections`: nothing would reach `output`") }
            return configuration
        }

        mutating func engine(_ node: Node) -> PipelineConfiguration.Engine {
            var engine = PipelineConfiguration.Engine()
            engine.location = location(node)
            for (key, _, value) in pairs(node, what: "engine", allowed: ConfigurationParser.engineKeys) {
                switch key {
                case "sample_rate": engine.sampleRate = integer(value, "engine.sample_rate", in: 8000...384_000) ?? engine.sampleRate
                case "period": engine.periodFrames = integer(value, "engine.period", in: 16...8192) ?? engine.periodFrames
                case "periods": engine.periods = integer(value, "engine.periods", in: 2...16) ?? engine.periods
                case "channels": engine.channels = integer(value, "engine.channels", in: 1...32) ?? engine.channels
                default: break
                }
            }
            return engine
        }

        mutating func device(_ node: Node) -> PipelineConfiguration.Device {
            var device = PipelineConfiguration.Device()
            device.location = location(node)
            for (key, _, value) in pairs(node, what: "device", allowed: ConfigurationParser.deviceKeys) {
                switch key {
                case "playback":
                    device.playback = deviceName(value, "device.playback")
                    device.playbackLocation = location(value)
                case "capture":
                    device.capture = deviceName(value, "device.capture")
                    device.captureLocation = location(value)
                case "fallback":
                    if let text = string(value, "device.fallback") {
                        if text == "null" || text.isEmpty { device.fallbackToNull = true }
                        else if text == "none" { device.fallbackToNull = false }
                        else { error(value, "device.fallback must be `null` (run on the timer-paced null device) or `none`, not '\(Diagnostic.excerpt(text))'") }
                    }
                case "priority": device.priority = Int32(integer(value, "device.priority", in: 1...99) ?? 70)
                case "input": device.inputFile = string(value, "device.input")
                case "output": device.outputFile = string(value, "device.output")
                case "voice_processing":
                    device.voiceProcessing = boolean(value, "device.voice_processing") ?? false
                    device.voiceProcessingLocation = location(value)
                case "wake_up":
                    if let text = string(value, "device.wake_up") {
                        if text == "poll" { device.wakesOnTimer = false }
                        else if text == "timer" { device.wakesOnTimer = true }
                        else { error(value, "device.wake_up must be `poll` (wait for the device's interrupt) or `timer` (wake on a timer predicted from the device's pointer), not '\(Diagnostic.excerpt(text))'") }
                    }
                case "headroom_us":
                    device.headroomMicroseconds = integer(value, "device.headroom_us", in: 0...20_000)
                    device.headroomLocation = location(value)
                default: break
                }
            }
            if device.headroomMicroseconds != nil, !device.wakesOnTimer, let at = device.headroomLocation {
                diagnostics.append(Diagnostic(at, "device.headroom_us applies to `wake_up: timer` only; add it or remove headroom_us"))
            }
            return device
        }

        /// A device name; YAML's `null` (or `~`) means Sonora's null device, `none` no device.
        mutating func deviceName(_ node: Node, _ what: String) -> String? {
            guard let scalar = node.scalar else { error(node, "\(what) must be a PCM name, `null` or `none`"); return nil }
            let text = scalar.string
            if text == "~" || text.isEmpty || text == "null" { return "null" }
            if text == "none" { return nil }
            return text
        }

        mutating func nodes(_ node: Node) -> [NodeSpec] {
            guard let sequence = node.sequence else { error(node, "`nodes` must be a list (lines starting with '- ')"); return [] }
            var result: [NodeSpec] = []
            var ids: [String: SourceLocation] = [:]
            for item in sequence {
                guard let spec = nodeSpec(item) else { continue }
                if let first = ids[spec.id] {
                    error(item, "node id '\(spec.id)' is used twice (first at \(first.line):\(first.column))")
                    continue
                }
                if ["input", "output"].contains(spec.id) {
                    error(item, "node id '\(spec.id)' is reserved for the device's \(spec.id == "input" ? "capture" : "playback")")
                    continue
                }
                if spec.id == VoiceProcessingNode.id {
                    error(item, VoiceProcessingNode.reservedMessage)
                    continue
                }
                ids[spec.id] = spec.location
                result.append(spec)
            }
            return result
        }

        /// Kind and option problems of nodes: reported, but the builder still checks the rest.
        var nodeProblems: [Diagnostic] = []

        mutating func nodeSpec(_ node: Node) -> NodeSpec? {
            guard let mapping = node.mapping else {
                error(node, "a node must be a mapping such as {id: tone, kind: tone}")
                return nil
            }
            func field(_ key: String) -> Node? { mapping.first { $0.key.scalar?.string == key }?.value }
            guard let idNode = field("id") else {
                error(node, "a node needs an `id`")
                return nil
            }
            guard let id = string(idNode, "node id") else { return nil }
            guard id.count <= ConfigurationParser.maximumIDLength else {
                error(idNode, "node id '\(Diagnostic.excerpt(id))' is longer than \(ConfigurationParser.maximumIDLength) characters")
                return nil
            }
            guard id.range(of: "^[A-Za-z_][A-Za-z0-9_.-]*$", options: .regularExpression) != nil else {
                error(idNode, "node id '\(Diagnostic.excerpt(id))' must start with a letter and hold only letters, digits, '_', '-', '.'")
                return nil
            }
            guard let kindNode = field("kind") else {
                error(node, "node '\(id)' needs a `kind` (a unit name such as GraphicEQ, or player, recorder, lv2; `sonora units` lists them)")
                return nil
            }
            guard let kindName = string(kindNode, "node kind") else { return nil }
            let kind = catalog.kind(named: kindName)
            if kind == nil {
                nodeProblems.append(Diagnostic(location(kindNode), "node '\(id)': unknown kind '\(Diagnostic.excerpt(kindName))'\(suggestion(for: kindName, in: catalog.names)) (`sonora units` lists them)"))
            }
            // Problems from here on are the node's own; they are reported with the builder's.
            let formProblems = diagnostics
            diagnostics = []
            defer {
                nodeProblems += diagnostics
                diagnostics = formProblems
            }
            var spec = NodeSpec(id: id, kind: kindName, location: location(node), kindLocation: location(kindNode))
            let optionKeys = kind?.options.map(\.key) ?? []
            let allowed = NodeKind.commonKeys + optionKeys
            let fields = pairs(node, what: "node '\(id)'", allowed: kind == nil ? allowed + mapping.compactMap { $0.key.scalar?.string } : allowed) { name in
                let takes = optionKeys.isEmpty ? "it takes no options of its own" : "it takes \(optionKeys.joined(separator: ", "))"
                return "node '\(id)': `\(Diagnostic.excerpt(name))` does not apply to \(kind?.name ?? kindName)\(suggestion(for: name, in: allowed)) (\(takes); every node takes \(NodeKind.commonKeys.joined(separator: ", ")))"
            }
            for (key, _, value) in fields {
                switch key {
                case "id", "kind", "comment": break
                case "parameters": spec.parameters = parameters(value, node: id)
                case "preset": if let text = string(value, "preset") { spec.preset = (text, location(value)) }
                case "bypass": if let flag = boolean(value, "bypass of node '\(id)'") { spec.bypass = LocatedOption(value: .boolean(flag), location: location(value)) }
                case "channels": if let declaration = channelDeclaration(value, node: id) { spec.channels = declaration } else { spec.invalidOptions.insert(key) }
                default:
                    guard let option = kind?.option(key) else { continue }
                    guard let typed = optionValue(value, option, node: id) else { spec.invalidOptions.insert(key); continue }
                    spec.options[key] = LocatedOption(value: typed, location: location(value))
                }
            }
            return spec
        }

        /// An option's value, read as its type says.
        mutating func optionValue(_ node: Node, _ option: NodeOption, node id: String) -> OptionValue? {
            optionValue(node, option, what: "\(option.key) of node '\(id)'")
        }

        mutating func optionValue(_ node: Node, _ option: NodeOption, what: String) -> OptionValue? {
            switch option.type {
            case .boolean:
                return boolean(node, what).map(OptionValue.boolean)
            case .integer(let range):
                return integer(node, what, in: range).map(OptionValue.integer)
            case .uri:
                guard let text = string(node, what) else { return nil }
                if let problem = LV2URIText.problem(text) { error(node, "\(what): \(problem)"); return nil }
                return .text(text)
            case .inputFile, .outputFile:
                guard let text = string(node, what) else { return nil }
                guard !text.isEmpty else { error(node, "\(what) is empty; give a file name"); return nil }
                return .text(text)
            case .number(let range, let unit):
                return number(node, what, in: range, unit: unit).map(OptionValue.number)
            case .name:
                guard let text = string(node, what) else { return nil }
                guard text.count <= ConfigurationParser.maximumIDLength, text.range(of: "^[A-Za-z_][A-Za-z0-9_-]*$", options: .regularExpression) != nil else {
                    error(node, "\(what) '\(Diagnostic.excerpt(text))' must start with a letter and hold only letters, digits, '_' and '-' (at most \(ConfigurationParser.maximumIDLength))")
                    return nil
                }
                return .text(text)
            case .choice(let words):
                guard let text = string(node, what) else { return nil }
                guard let word = words.first(where: { $0.lowercased() == text.lowercased() }) else {
                    error(node, "\(what) must be one of \(words.joined(separator: ", ")), not '\(Diagnostic.excerpt(text))'\(suggestion(for: text, in: words))")
                    return nil
                }
                return .text(word)
            case .point:
                guard let items = node.sequence, items.count == 3 else {
                    let count = node.sequence.map { " (it has \($0.count) number\($0.count == 1 ? "" : "s"))" } ?? ""
                    error(node, "\(what) must be [x, y, z]: three numbers in metres\(count)")
                    return nil
                }
                var coordinates: [Double] = []
                for (item, axis) in zip(items, ["x", "y", "z"]) {
                    guard let value = number(item, "\(axis) of \(what)", in: -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude, unit: nil) else { return nil }
                    coordinates.append(value)
                }
                return .point(SIMD3(coordinates[0], coordinates[1], coordinates[2]))
            case .integers(let range):
                guard let items = node.sequence, !items.isEmpty else { error(node, "\(what) must be a list of whole numbers such as [1, 0]"); return nil }
                var numbers: [Int] = []
                for (index, item) in items.enumerated() {
                    guard let number = integer(item, "\(what), entry \(index)", in: range) else { return nil }
                    numbers.append(number)
                }
                return .integers(numbers)
            case .list(let fields):
                guard let sequence = node.sequence else { error(node, "\(what) must be a list (lines starting with '- ')"); return nil }
                guard !sequence.isEmpty else { error(node, "\(what) is empty; give at least one"); return nil }
                let key = what.split(separator: " ").first.map(String.init) ?? what
                let owner = what.dropFirst(key.count)
                var items: [[String: LocatedOption]] = []
                var valid = true
                for (index, item) in sequence.enumerated() {
                    let itemWhat = "\(key)[\(index)]\(owner)"
                    let allowed = fields.map(\.key)
                    let given = pairs(item, what: itemWhat, allowed: allowed)
                    if item.mapping == nil { valid = false; continue }
                    var entry: [String: LocatedOption] = [:]
                    for (name, _, value) in given {
                        guard let field = fields.first(where: { $0.key == name }) else { continue }
                        guard let typed = optionValue(value, field, what: "\(name) of \(itemWhat)") else { valid = false; continue }
                        entry[name] = LocatedOption(value: typed, location: location(value))
                    }
                    for field in fields where field.isRequired && !given.contains(where: { $0.key == field.key }) {
                        error(item, "\(itemWhat) needs `\(field.key)`: \(field.documentation)")
                        valid = false
                    }
                    items.append(entry)
                }
                return valid ? .list(items) : nil
            }
        }

        /// A finite number in `range`, optionally followed by `unit` (`-6 dB`).
        mutating func number(_ node: Node, _ what: String, in range: ClosedRange<Double>, unit: String?) -> Double? {
            guard let text = string(node, what) else { return nil }
            var trimmed = text.trimmingCharacters(in: .whitespaces)
            if let unit, trimmed.lowercased().hasSuffix(unit.lowercased()) {
                trimmed = String(trimmed.dropLast(unit.count)).trimmingCharacters(in: .whitespaces)
            }
            guard let value = Double(trimmed), value.isFinite else {
                error(node, "\(what) must be a number\(unit.map { " (in \($0))" } ?? ""), not '\(Diagnostic.excerpt(text))'")
                return nil
            }
            guard range.contains(value) else {
                error(node, "\(what) \(OptionValue.format(value)) is out of range \(OptionValue.format(range.lowerBound))…\(OptionValue.format(range.upperBound))\(unit.map { " \($0)" } ?? "")")
                return nil
            }
            return value
        }

        mutating func parameters(_ node: Node, node id: String) -> [ParameterSetting] {
            var result: [ParameterSetting] = []
            if let mapping = node.mapping {
                // Short form: `name: value` for the parameter's global (or only) address.
                for (key, value) in mapping {
                    guard let name = key.scalar?.string else { error(key, "parameter names must be plain words"); continue }
                    guard let text = string(value, "parameter '\(Diagnostic.excerpt(name))' of node '\(id)'") else { continue }
                    result.append(ParameterSetting(address: .name(name), value: text, location: location(key), valueLocation: location(value)))
                }
            } else if let sequence = node.sequence {
                for item in sequence {
                    let fields = pairs(item, what: "a parameter of node '\(id)'", allowed: ConfigurationParser.parameterKeys)
                    if fields.isEmpty { continue }
                    var address: ParameterSetting.Address?
                    var setting = ParameterSetting(address: .name(""), value: "", location: location(item), valueLocation: location(item))
                    var sawValue = false
                    for (key, _, value) in fields {
                        switch key {
                        case "name": if let text = string(value, "parameter name") { address = .name(text) }
                        case "id":
                            if let number = integer(value, "parameter id", in: 0...Int(UInt32.max)) { address = .id(UInt32(number)) }
                        case "scope":
                            if let text = string(value, "scope") {
                                if ["global", "input", "output"].contains(text) { setting.scope = text }
                                else { error(value, "scope must be global, input or output, not '\(Diagnostic.excerpt(text))'") }
                            }
                        case "element": setting.element = integer(value, "element", in: 0...1023)
                        case "value":
                            if let text = string(value, "value") { setting.value = text; setting.valueLocation = location(value); sawValue = true }
                        case "ramp": setting.ramp = number(value, "ramp (seconds)", in: 0...60)
                        default: break
                        }
                    }
                    guard let address else { error(item, "a parameter of node '\(id)' needs a `name` or an `id`"); continue }
                    guard sawValue else { error(item, "parameter of node '\(id)' has no `value`"); continue }
                    setting.address = address
                    result.append(setting)
                }
            } else {
                error(node, "parameters of node '\(id)' must be a mapping (name: value) or a list of {name|id, scope, element, value}")
            }
            return result
        }

        mutating func connections(_ node: Node) -> [ConnectionSpec] {
            guard let sequence = node.sequence else { error(node, "`connections` must be a list of {from, to}"); return [] }
            var result: [ConnectionSpec] = []
            for item in sequence {
                let fields = pairs(item, what: "a connection", allowed: ["from", "to"])
                guard let from = fields.first(where: { $0.key == "from" }), let to = fields.first(where: { $0.key == "to" }) else {
                    if !fields.isEmpty || item.mapping != nil { error(item, "a connection needs both `from` and `to`") }
                    continue
                }
                guard let source = endpoint(from.value, "from"), let destination = endpoint(to.value, "to") else { continue }
                result.append(ConnectionSpec(
                    from: source.0, fromBus: source.1, to: destination.0, toInput: destination.1,
                    location: location(item), fromLocation: location(from.value), toLocation: location(to.value)))
            }
            return result
        }

        /// `node` or `node:element`.
        mutating func endpoint(_ node: Node, _ what: String) -> (String, Int)? {
            guard let text = string(node, "connection \(what)") else { return nil }
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2, !parts[0].isEmpty else {
                error(node, "connection \(what) must be `node` or `node:element`, not '\(Diagnostic.excerpt(text))'")
                return nil
            }
            var element = 0
            if parts.count == 2 {
                guard let number = Int(parts[1]), (0...1023).contains(number) else {
                    error(node, "element in '\(Diagnostic.excerpt(text))' must be a whole number in 0…1023")
                    return nil
                }
                element = number
            }
            return (String(parts[0]), element)
        }

        mutating func control(_ node: Node) -> PipelineConfiguration.Control {
            var control = PipelineConfiguration.Control()
            control.location = location(node)
            for (key, _, value) in pairs(node, what: "control", allowed: ConfigurationParser.controlKeys) {
                if key == "socket" {
                    control.socketPath = string(value, "control.socket")
                    control.socketLocation = location(value)
                    if control.socketPath?.isEmpty == true { error(value, "control.socket is empty; give a path"); control.socketPath = nil }
                }
                if key == "timeout" { control.requestTimeout = number(value, "control.timeout (seconds)", in: 0.1...3600) ?? control.requestTimeout }
            }
            return control
        }

        mutating func status(_ node: Node) -> PipelineConfiguration.Status {
            var status = PipelineConfiguration.Status()
            for (key, _, value) in pairs(node, what: "status", allowed: ConfigurationParser.statusKeys) {
                switch key {
                case "interval": status.interval = number(value, "status.interval", in: 0...3600) ?? 1
                case "meters":
                    for item in value.sequence ?? [value] {
                        guard let name = string(item, "status.meters entry") else { continue }
                        status.meters.append(name)
                        status.meterLocations.append(location(item))
                    }
                default: break
                }
            }
            return status
        }
    }
}
