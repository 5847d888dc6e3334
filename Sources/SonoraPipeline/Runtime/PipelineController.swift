import Foundation
import Logging
import SonoraCore
import SonoraHAL
import SonoraUnits
import Synchronization

/// The control side of a running pipeline: parameters, properties, meters, status,
/// reload and save — for the control socket, signals and the status line. One operation
/// at a time (a lock, never held by the I/O thread).
public final class PipelineController: @unchecked Sendable {
    public private(set) var pipeline: BuiltPipeline
    public let device: any AudioDevice
    public let configPath: String
    private let lock = Mutex<Void>(())
    let logger: Logger

    public init(pipeline: BuiltPipeline, device: any AudioDevice, configPath: String, logger: Logger) {
        self.pipeline = pipeline
        self.device = device
        self.configPath = configPath
        self.logger = logger
    }

    public func serialized<T>(_ body: () throws -> T) rethrows -> T {
        try lock.withLock { _ in try body() }
    }

    // MARK: Requests

    public struct ControlError: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    func node(_ id: String?) throws -> PipelineNode {
        guard let id else { throw ControlError("missing \"node\"") }
        guard let node = pipeline.node(id) else {
            throw ControlError("no node '\(id)'\(suggestion(for: id, in: pipeline.nodes.map(\.id)))")
        }
        return node
    }

    func definition(_ unit: AudioUnit, _ name: Any?, scope: String?) throws -> AudioUnitParameterDefinition {
        let definitions = unit.parameterDefinitions
        var matches: [AudioUnitParameterDefinition]
        if let id = name as? Int {
            matches = definitions.filter { $0.id == UInt32(clamping: id) }
        } else if let text = name as? String {
            func normalized(_ s: String) -> String { s.lowercased().filter { $0.isLetter || $0.isNumber } }
            matches = definitions.filter { normalized($0.info.name) == normalized(text) || normalized($0.info.identifier) == normalized(text) || "\($0.id)" == text }
            if matches.isEmpty {
                throw ControlError("\(unit.name) has no parameter '\(text)'\(suggestion(for: text, in: definitions.map(\.info.name)))")
            }
        } else {
            throw ControlError("missing \"param\" (a name or an ID)")
        }
        if let scope {
            matches = matches.filter { $0.scope.description == scope }
        }
        guard let first = matches.first else { throw ControlError("\(unit.name) has no such parameter\(scope.map { " in the \($0) scope" } ?? "")") }
        return first
    }

    func parameterInfo(_ definition: AudioUnitParameterDefinition, unit: AudioUnit, element: Int) -> [String: Any] {
        let info = definition.info
        var entry: [String: Any] = [
            "id": Int(definition.id), "name": info.name, "scope": definition.scope.description, "unit": info.unit.symbol,
            "min": Double(info.minValue), "max": Double(info.maxValue), "default": Double(info.defaultValue),
            "writable": info.flags.contains(.isWritable), "element": element,
        ]
        if let value = try? unit.parameter(definition.id, scope: definition.scope, element: element) { entry["value"] = Double(value) }
        if !info.valueStrings.isEmpty { entry["values"] = info.valueStrings }
        return entry
    }

    /// Handles one request (already decoded JSON); returns the response object.
    public func handle(_ request: [String: Any]) -> [String: Any] {
        do {
            return try serialized { try perform(request) }
        } catch {
            return ["ok": false, "error": "\(error)"]
        }
    }

    private func perform(_ request: [String: Any]) throws -> [String: Any] {
        guard let command = request["cmd"] as? String else { throw ControlError("missing \"cmd\" (nodes, params, get, set, get-property, set-property, meters, status, reload, save)") }
        switch command {
        case "nodes":
            return ["ok": true, "nodes": pipeline.nodes.map { ["id": $0.id, "kind": $0.kind, "unit": $0.unit.componentDescription.description] }]
        case "params":
            let node = try node(request["node"] as? String)
            var list: [[String: Any]] = []
            for definition in node.unit.parameterDefinitions {
                let elements = definition.scope == .global ? 1 : node.unit.elementCount(definition.scope)
                for element in 0..<elements { list.append(parameterInfo(definition, unit: node.unit, element: element)) }
            }
            return ["ok": true, "node": node.id, "params": list]
        case "get":
            let node = try node(request["node"] as? String)
            let definition = try definition(node.unit, request["param"], scope: request["scope"] as? String)
            let element = request["element"] as? Int ?? 0
            let value = try node.unit.parameter(definition.id, scope: definition.scope, element: element)
            return ["ok": true, "node": node.id, "param": definition.info.name, "value": Double(value), "unit": definition.info.unit.symbol]
        case "set":
            let node = try node(request["node"] as? String)
            let definition = try definition(node.unit, request["param"], scope: request["scope"] as? String)
            let element = request["element"] as? Int ?? 0
            let elements = definition.scope == .global ? 1 : node.unit.elementCount(definition.scope)
            guard element >= 0 && element < elements else { throw ControlError("element \(element) out of range 0…\(elements - 1)") }
            let text: String
            if let number = request["value"] as? Double { text = "\(number)" }
            else if let string = request["value"] as? String { text = string }
            else if let flag = request["value"] as? Bool { text = flag ? "on" : "off" }
            else { throw ControlError("missing \"value\"") }
            let value: Float
            switch ParameterValue.parse(text, for: definition.info, sampleRate: Double(pipeline.configuration.engine.sampleRate)) {
            case .success(let v): value = v
            case .failure(let problem): throw ControlError(problem.message)
            }
            let ramp = request["ramp"] as? Double ?? 0
            guard ramp >= 0 && ramp <= 60 else { throw ControlError("ramp must be 0…60 seconds") }
            if ramp > 0 {
                let frames = Int(ramp * Double(pipeline.configuration.engine.sampleRate))
                try node.unit.rampParameter(definition.id, scope: definition.scope, element: element, to: value, duration: frames)
            } else {
                try node.unit.setParameter(definition.id, scope: definition.scope, element: element, to: value)
            }
            return ["ok": true, "node": node.id, "param": definition.info.name, "value": Double(value)]
        case "get-property":
            let node = try node(request["node"] as? String)
            switch request["property"] as? String {
            case "latency": return ["ok": true, "value": node.unit.latency]
            case "bypass": return ["ok": true, "value": node.unit.isBypassed]
            case "preset": return ["ok": true, "value": node.unit.presentPreset?.name ?? NSNull(), "presets": node.unit.factoryPresets.map(\.name)]
            case "tail": return ["ok": true, "value": node.unit.tailTime]
            default: throw ControlError("property must be latency, bypass, preset or tail")
            }
        case "set-property":
            let node = try node(request["node"] as? String)
            switch request["property"] as? String {
            case "bypass":
                guard let on = request["value"] as? Bool else { throw ControlError("bypass takes true or false") }
                try node.unit.setBypass(on)
                return ["ok": true]
            case "preset":
                guard let name = request["value"] as? String else { throw ControlError("preset takes a name") }
                guard let preset = node.unit.factoryPresets.first(where: { $0.name.lowercased() == name.lowercased() }) else {
                    throw ControlError("no preset '\(name)'\(suggestion(for: name, in: node.unit.factoryPresets.map(\.name)))")
                }
                try node.unit.setPresentPreset(preset)
                return ["ok": true]
            default: throw ControlError("settable properties: bypass, preset")
            }
        case "meters":
            return ["ok": true, "meters": meters()]
        case "status":
            return ["ok": true, "status": status()]
        case "reload":
            let result = reload()
            return result.isEmpty ? ["ok": true] : ["ok": false, "error": result.map(\.description).joined(separator: "\n"), "diagnostics": result.map(\.description)]
        case "save":
            guard let path = request["path"] as? String else { throw ControlError("missing \"path\"") }
            try save(to: path)
            return ["ok": true, "path": path]
        default:
            throw ControlError("unknown command '\(command)'\(suggestion(for: command, in: ["nodes", "params", "get", "set", "get-property", "set-property", "meters", "status", "reload", "save"]))")
        }
    }

    /// Every read-only (meter) parameter of every node.
    public func meters() -> [[String: Any]] {
        var result: [[String: Any]] = []
        for node in pipeline.nodes {
            for definition in node.unit.parameterDefinitions where definition.info.flags.contains(.meterReadOnly) {
                let elements = definition.scope == .global ? 1 : node.unit.elementCount(definition.scope)
                for element in 0..<elements {
                    if let value = try? node.unit.parameter(definition.id, scope: definition.scope, element: element) {
                        result.append(["node": node.id, "meter": definition.info.name, "scope": definition.scope.description, "element": element, "value": Double(value), "unit": definition.info.unit.symbol])
                    }
                }
            }
        }
        return result
    }

    public func status() -> [String: Any] {
        let statistics = device.statistics
        let format = device.format
        let latency = format.roundTripFrames
        return [
            "device": device.driver, "cycles": statistics.cycles, "xruns": statistics.xruns,
            "load_mean": statistics.loadMean, "load_max": statistics.loadMax,
            "latency_frames": latency, "latency_ms": Double(latency) * 1000 / Double(format.sampleRate),
            "rate_scalar": statistics.rateScalar, "interruptions": statistics.interruptions, "running": device.isRunning,
        ]
    }

    // MARK: Reload and save

    /// Re-reads the config file and applies what changed while running; on any error the
    /// running pipeline stays untouched and the errors are returned.
    public func reload() -> [Diagnostic] {
        let configuration: PipelineConfiguration
        do {
            configuration = try ConfigurationParser.parse(contentsOf: configPath)
        } catch {
            return error.diagnostics
        }
        let problems = PipelineBuilder.check(configuration)
        guard problems.isEmpty else { return problems }
        do {
            try PipelineReloader(controller: self).apply(configuration)
        } catch let error as ConfigurationErrors {
            return error.diagnostics
        } catch {
            return [Diagnostic(SourceLocation(file: configPath, line: 1, column: 1), "\(error)")]
        }
        return []
    }

    func replace(_ pipeline: BuiltPipeline) { self.pipeline = pipeline }

    /// Writes the running pipeline back as a config: the file's structure with every
    /// writable parameter's current value and each node's present preset.
    public func save(to path: String) throws {
        let text = PipelineWriter.yaml(for: pipeline)
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp")
        try Data(text.utf8).write(to: temporary)
        // Whole or not at all: the new file replaces the old one in one rename.
        guard rename(temporary.path, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary.path)
            throw ControlError("cannot save to \(path): \(reason)")
        }
    }
}
