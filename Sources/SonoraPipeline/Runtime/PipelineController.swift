import Foundation
import Logging
import SonoraCore
import SonoraHAL
import SonoraUnits

/// The control side of a running pipeline: parameters, properties, meters, status,
/// reload and save — for the control socket, signals and the status line. One operation
/// at a time (a lock, never held by the I/O thread).
public final class PipelineController: @unchecked Sendable {
    public private(set) var pipeline: BuiltPipeline
    /// The device the pipeline runs on now (another after `switchDevice`).
    public var device: any AudioDevice { deviceState.withLock { $0 } }
    private let deviceState: ControlLock<any AudioDevice>
    public let configPath: String
    private let lock = ControlLock<Void>(())
    let logger: Logger
    /// The session server when the config has a `session` section (its streams are the
    /// `clients` node's).
    public var sessionServer: ApplianceSessionServer?
    /// Reloads accepted and refused since start (for `metrics`).
    public let reloadCounts = ReloadCounts()

    public init(pipeline: BuiltPipeline, device: any AudioDevice, configPath: String, logger: Logger) {
        self.pipeline = pipeline
        deviceState = ControlLock(device)
        self.configPath = configPath
        self.logger = logger
    }

    public func serialized<T>(_ body: () throws -> T) rethrows -> T {
        try lock.withLock { _ in try body() }
    }

    // MARK: Requests

    /// Performs one request (one at a time) and answers it; a refused request changes nothing.
    public func handle(_ request: ControlRequest) -> ControlResponse {
        do {
            return try serialized { try perform(request) }
        } catch let failure as ControlFailure {
            return .failure(failure)
        } catch {
            return .failure(ControlFailure(.failed, "\(error)"))
        }
    }

    private func perform(_ request: ControlRequest) throws -> ControlResponse {
        switch request {
        case .nodes:
            return .nodes(pipeline.controlNodes.map { node in
                .init(id: node.id, kind: node.kind, unit: node.unit.componentDescription.description,
                      streams: node.unit is ClientStreamsUnit ? clientStreams() : nil)
            })
        case .parameters(let id):
            if let source = try source(id) { return .parameters(node: id, summaries(of: source)) }
            let node = try node(id)
            var list: [ControlResponse.ParameterSummary] = []
            for definition in node.unit.parameterDefinitions {
                for element in 0..<elementCount(definition, node.unit) { list.append(summary(definition, unit: node.unit, element: element)) }
            }
            return .parameters(node: node.id, list)
        case .get(let selector):
            let routed = try route(selector)
            if let source = routed.source, let parameter = routed.parameter {
                return .parameter(try reading(source, parameter, as: selector.node))
            }
            let (node, definition, element) = try resolve(routed.selector)
            return .parameter(try reading(node, definition, element))
        case .set(let selector, let given, let ramp):
            let routed = try route(selector)
            if let source = routed.source, let parameter = routed.parameter {
                try set(source, parameter, to: given, ramp: ramp)
                return .parameter(try reading(source, parameter, as: selector.node))
            }
            let (node, definition, element) = try resolve(routed.selector)
            guard definition.info.flags.contains(.isWritable) else {
                throw ControlFailure(.readOnly, field: "param", "\(node.id): '\(definition.info.name)' is read-only")
            }
            let value = try value(given, for: definition)
            do {
                if let ramp, ramp > 0 {
                    let frames = Int(ramp * Double(pipeline.configuration.engine.sampleRate))
                    try node.unit.rampParameter(definition.id, scope: definition.scope, element: element, to: value, duration: frames)
                } else {
                    try node.unit.setParameter(definition.id, scope: definition.scope, element: element, to: value)
                }
            } catch {
                throw ControlFailure(.failed, "\(node.id): \(error)")
            }
            return .parameter(try reading(node, definition, element))
        case .getProperty(let id, let property):
            let node = try node(id)
            return .property(reading(node, property))
        case .setProperty(let id, let setting):
            let node = try node(id)
            switch setting {
            case .bypass(let on):
                do { try node.unit.setBypass(on) } catch { throw ControlFailure(.failed, field: "value", "\(node.id): \(error)") }
                return .property(reading(node, .bypass))
            case .preset(let name):
                let presets = node.unit.factoryPresets
                guard let preset = presets.first(where: { $0.name.lowercased() == name.lowercased() }) else {
                    let list = presets.isEmpty ? "\(node.id) has no presets" : "presets: \(presets.map(\.name).joined(separator: ", "))"
                    throw ControlFailure(.unknownPreset, field: "value", "no preset '\(Diagnostic.excerpt(name))' on \(node.id)\(suggestion(for: String(name.prefix(64)), in: presets.map(\.name))) (\(list))")
                }
                do { try node.unit.setPresentPreset(preset) } catch { throw ControlFailure(.failed, field: "value", "\(node.id): \(error)") }
                return .property(reading(node, .preset))
            }
        case .meters:
            return .meters(meters())
        case .status:
            return .status(status())
        case .reload:
            let problems = reload()
            guard problems.isEmpty else {
                let lines = problems.map(\.description)
                throw ControlFailure(.reloadRefused, lines.joined(separator: "\n"), diagnostics: lines)
            }
            return .reloaded
        case .save(let path, let overwrite):
            do { try save(to: path, overwrite: overwrite) } catch let failure as ControlFailure { throw failure } catch {
                throw ControlFailure(.failed, field: "path", "\(error)")
            }
            return .saved(path: path)
        case .version:
            return .version(.current)
        case .metrics:
            return .metrics(metricsText())
        case .device(let playback, let capture):
            try switchDevice(playback: playback, capture: capture)
            return .status(status())
        case .transport(let transport):
            return try performTransport(transport)
        case .patch(let patch):
            return try performPatch(patch)
        }
    }

    /// The name programs see for `device` in their route: its PCM, else its driver.
    static func routeName(of device: any AudioDevice) -> String {
        device.format.playback?.pcmName ?? device.format.capture?.pcmName ?? device.driver
    }

    /// Moves the running pipeline onto another device (one operation at a time: call it
    /// serialized): opened with the engine's rate and period, the I/O unit moved onto it
    /// without rebuilding the graph, the old device closed. `playback` alone also moves the
    /// capture side when the config captures from the same device. Anything that fails
    /// leaves the pipeline on the device it had. Attached programs get a route change.
    func switchDevice(playback: String?, capture: String?) throws(ControlFailure) {
        guard let io = pipeline.io else { throw ControlFailure(.failed, "the pipeline runs offline; it has no device to switch") }
        let old = device
        let oldName = Self.routeName(of: old)
        var configuration = pipeline.configuration
        let current = configuration.device
        if let playback { configuration.device.playback = playback }
        if let capture {
            configuration.device.capture = capture
        } else if let playback, current.capture != nil, current.capture == current.playback {
            configuration.device.capture = playback
        }
        if (configuration.device.capture != nil) != (current.capture != nil) || (configuration.device.playback != nil) != (current.playback != nil) {
            throw ControlFailure(.badField, field: capture != nil ? "capture" : "playback", "the pipeline was built \(current.capture == nil ? "without" : "with") capture and \(current.playback == nil ? "without" : "with") playback; a device switch keeps that")
        }
        // An explicit choice is honoured or refused, never replaced by the null device.
        configuration.device.fallbackToNull = false
        let field = playback != nil ? "playback" : "capture"
        let new: any AudioDevice
        do { new = try DeviceOpener.open(configuration, logger: logger) } catch {
            throw ControlFailure(.failed, field: field, "cannot open \(Diagnostic.excerpt(configuration.device.playback ?? configuration.device.capture ?? "the device")): \(error.message); still on \(oldName)")
        }
        do { try io.switchDevice(to: new) } catch {
            new.stop()
            throw ControlFailure(.failed, field: field, "\(error.message); still on \(oldName)")
        }
        deviceState.withLock { $0 = new }
        old.stop()
        pipeline.configuration.device.playback = configuration.device.playback
        pipeline.configuration.device.capture = configuration.device.capture
        let newName = Self.routeName(of: new)
        logger.notice("switched from \(oldName) to \(newName)")
        sessionServer?.deviceSwitched(to: newName)
    }

    func node(_ id: String) throws(ControlFailure) -> PipelineNode {
        guard let node = pipeline.controlNode(id) else {
            throw ControlFailure(.unknownNode, field: "node", "no node '\(Diagnostic.excerpt(id))'\(suggestion(for: String(id.prefix(64)), in: pipeline.controlNodes.map(\.id)))")
        }
        return node
    }

    func elementCount(_ definition: AudioUnitParameterDefinition, _ unit: AudioUnit) -> Int {
        definition.scope == .global ? 1 : unit.elementCount(definition.scope)
    }

    /// The node, parameter and element a selector names, each checked: an unknown name, a
    /// name in several scopes without `scope`, or an element the scope does not have is
    /// refused, naming the field — never quietly read as element 0 or the first scope.
    func resolve(_ selector: ControlRequest.ParameterSelector) throws(ControlFailure) -> (PipelineNode, AudioUnitParameterDefinition, Int) {
        let node = try node(selector.node)
        let definitions = node.unit.parameterDefinitions
        var matches: [AudioUnitParameterDefinition]
        let label: String
        switch selector.parameter {
        case .id(let id):
            matches = definitions.filter { $0.id == id }
            label = "\(id)"
        case .name(let text):
            func normalized(_ s: String) -> String { s.lowercased().filter { $0.isLetter || $0.isNumber } }
            let wanted = normalized(text)
            matches = definitions.filter { normalized($0.info.name) == wanted || normalized($0.info.identifier) == wanted || "\($0.id)" == text }
            label = "'\(Diagnostic.excerpt(text))'"
        }
        guard !matches.isEmpty else {
            var hint = ""
            if case .name(let text) = selector.parameter { hint = suggestion(for: String(text.prefix(64)), in: definitions.map(\.info.name)) }
            throw ControlFailure(.unknownParameter, field: "param", "\(node.id) has no parameter \(label)\(hint) (`params \(node.id)` lists them)")
        }
        let scopes = matches.map(\.scope.description)
        if let scope = selector.scope {
            matches = matches.filter { $0.scope == scope }
            guard !matches.isEmpty else {
                throw ControlFailure(.badField, field: "scope", "\(node.id): parameter \(label) is not in the \(scope) scope (it is in: \(scopes.joined(separator: ", ")))")
            }
        } else if Set(scopes).count > 1 {
            throw ControlFailure(.missingField, field: "scope", "\(node.id): parameter \(label) is in several scopes (\(scopes.joined(separator: ", "))); say which with \"scope\"")
        }
        let definition = matches[0]
        let element = selector.element ?? 0
        let count = elementCount(definition, node.unit)
        guard element < count else {
            let range = count == 0 ? "no elements" : count == 1 ? "only element 0" : "elements 0…\(count - 1)"
            throw ControlFailure(.outOfRange, field: "element", "element \(element) is out of range: \(node.id)'s \(definition.scope) scope has \(range) for '\(definition.info.name)'")
        }
        return (node, definition, element)
    }

    /// A `set` value in the parameter's unit, range-checked; NaN and infinities refused.
    func value(_ given: ControlValue, for definition: AudioUnitParameterDefinition) throws(ControlFailure) -> Float {
        let text: String
        switch given {
        case .number(let number):
            guard number.isFinite else { throw ControlFailure(.badField, field: "value", "value must be a finite number, not \(number)") }
            text = "\(number)"
        case .flag(let on): text = on ? "on" : "off"
        case .text(let string):
            let word = string.trimmingCharacters(in: .whitespaces).lowercased()
            if ["nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"].contains(word) {
                throw ControlFailure(.badField, field: "value", "value must be a finite number, not \(word)")
            }
            guard string.utf8.count <= 200 else {
                throw ControlFailure(.badField, field: "value", "value '\(Diagnostic.excerpt(string))' is \(string.utf8.count) bytes; no parameter value is that long")
            }
            text = string
        }
        switch ParameterValue.parse(text, for: definition.info, sampleRate: Double(pipeline.configuration.engine.sampleRate)) {
        case .success(let value) where value.isFinite: return value
        case .success: throw ControlFailure(.outOfRange, field: "value", "\(text) is out of range for '\(definition.info.name)'")
        case .failure(let problem):
            throw ControlFailure(problem.message.contains("out of range") ? .outOfRange : .badField, field: "value", problem.message)
        }
    }

    private func reading(_ node: PipelineNode, _ definition: AudioUnitParameterDefinition, _ element: Int) throws(ControlFailure) -> ControlResponse.ParameterReading {
        let value: Float
        do { value = try node.unit.parameter(definition.id, scope: definition.scope, element: element) } catch {
            throw ControlFailure(.failed, "\(node.id): \(error)")
        }
        return .init(node: node.id, param: definition.info.name, scope: definition.scope.description, element: element,
                     value: Double(value), unit: definition.info.unit.symbol)
    }

    private func reading(_ node: PipelineNode, _ property: ControlProperty) -> ControlResponse.PropertyReading {
        let unit = node.unit
        switch property {
        case .latency: return .init(node: node.id, property: property, value: .seconds(unit.latency))
        case .tail: return .init(node: node.id, property: property, value: .seconds(unit.tailTime))
        case .bypass: return .init(node: node.id, property: property, value: .flag(unit.isBypassed))
        case .preset:
            return .init(node: node.id, property: property, value: .name(unit.presentPreset?.name), presets: unit.factoryPresets.map(\.name))
        }
    }

    func summary(_ definition: AudioUnitParameterDefinition, unit: AudioUnit, element: Int) -> ControlResponse.ParameterSummary {
        let info = definition.info
        let value = try? unit.parameter(definition.id, scope: definition.scope, element: element)
        return .init(id: definition.id, name: info.name, scope: definition.scope.description, element: element, unit: info.unit.symbol,
                     min: Double(info.minValue), max: Double(info.maxValue), default: Double(info.defaultValue),
                     writable: info.flags.contains(.isWritable), value: value.map(Double.init),
                     values: info.valueStrings.isEmpty ? nil : info.valueStrings)
    }

    /// Every read-only (meter) parameter of every node.
    /// The attached programs' streams, with the program's name.
    public func clientStreams() -> [ControlResponse.ClientStreamSummary] {
        guard let server = sessionServer?.server else { return [] }
        let names = Dictionary(server.clients.map { ($0.pid, $0.name) }, uniquingKeysWith: { first, _ in first })
        return server.streams.snapshot().map { stream in
            .init(stream: stream.id, pid: stream.pid, program: names[stream.pid] ?? "", direction: stream.direction.rawValue,
                  channels: stream.channels, gainDB: stream.gain > 0 ? 20 * log10(Double(stream.gain)) : -120,
                  peakDBFS: stream.peakDBFS.isFinite ? max(stream.peakDBFS, -120) : -120, underruns: stream.underruns, overruns: stream.overruns, faulted: stream.faulted)
        }
    }

    public func meters() -> [ControlResponse.MeterReading] {
        var result: [ControlResponse.MeterReading] = []
        for node in pipeline.nodes where node.unit is ClientStreamsUnit {
            // Each stream's peak, named by program and stream: the clients node's meters.
            for stream in clientStreams() where stream.direction == "playback" {
                result.append(.init(node: node.id, meter: "\(stream.program)[\(stream.pid)] stream \(stream.stream) peak", scope: "input",
                                    element: stream.stream, value: stream.peakDBFS, unit: "dB"))
            }
        }
        for node in pipeline.nodes {
            for definition in node.unit.parameterDefinitions where definition.info.flags.contains(.meterReadOnly) {
                for element in 0..<elementCount(definition, node.unit) {
                    if let value = try? node.unit.parameter(definition.id, scope: definition.scope, element: element) {
                        result.append(.init(node: node.id, meter: definition.info.name, scope: definition.scope.description,
                                            element: element, value: Double(value), unit: definition.info.unit.symbol))
                    }
                }
            }
        }
        // The voice-processing I/O unit's meters, under the names metrics and scripts read.
        return result + pipeline.voiceMeters()
    }

    public func status() -> ControlResponse.StatusReport {
        let statistics = device.statistics
        let format = device.format
        let latency = format.roundTripFrames
        return .init(
            device: device.driver, cycles: statistics.cycles, xruns: statistics.xruns,
            loadMean: statistics.loadMean, loadMax: statistics.loadMax,
            latencyFrames: latency, latencyMilliseconds: Double(latency) * 1000 / Double(format.sampleRate),
            rateScalar: statistics.rateScalar, interruptions: statistics.interruptions, running: device.isRunning,
            // Recorders stopped by a write error (a full disk), empty when all is well.
            recorderFailures: pipeline.recorderFailures, deviceName: Self.routeName(of: device))
    }

    // MARK: Reload and save

    /// Re-reads the config file and applies what changed while running; on any error the
    /// running pipeline stays untouched and the errors are returned.
    public func reload() -> [Diagnostic] {
        let problems = reloadFromFile()
        reloadCounts.record(accepted: problems.isEmpty)
        return problems
    }

    private func reloadFromFile() -> [Diagnostic] {
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
    /// Refuses an existing file unless `overwrite`, and anything that is not a regular file
    /// (a folder, the control socket, a device node) always — as every command that writes.
    public func save(to path: String, overwrite: Bool = false) throws {
        var info = stat()
        if lstat(path, &info) == 0 {
            let kind = info.st_mode & S_IFMT
            guard kind == S_IFREG else {
                throw ControlFailure(.failed, field: "path", "\(path) exists and is not a regular file; it is never replaced")
            }
            guard overwrite else {
                throw ControlFailure(.failed, field: "path", "\(path) exists; save with overwrite (sonora ctl save --overwrite) to replace it")
            }
        }
        let text = PipelineWriter.yaml(for: pipeline)
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp")
        try Data(text.utf8).write(to: temporary)
        // Whole or not at all: the new file replaces the old one in one rename.
        guard rename(temporary.path, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary.path)
            throw ControlFailure(.failed, field: "path", "cannot save to \(path): \(reason)")
        }
    }
}
