import Foundation
import SonoraCore
import SonoraLV2
import SonoraUnits

/// The `patch` command: an LV2 node's patch parameters (lv2:Parameter properties the plugin
/// lists as patch:writable / patch:readable), found by URI, label or URID, read through
/// patch:Get and set through patch:Set — both on the plugin's control atom input at the start
/// of the next cycle; the plugin's answers come back on its atom outputs.
extension PipelineController {
    func performPatch(_ request: PatchRequest) throws -> ControlResponse {
        let node = try node(request.node)
        guard let unit = node.unit as? any LV2PatchSurface else {
            throw ControlFailure(.unknownProperty, field: "node", "\(node.id) is a \(node.kind) node; patch properties are LV2 plugins'")
        }
        let parameters = unit.plugin.patchParameters
        guard !parameters.isEmpty else {
            throw ControlFailure(.unknownProperty, field: "node", "\(node.id) (\(unit.plugin.uri)) has no patch properties")
        }
        var selected = parameters
        if let property = request.property {
            let parameter = try Self.patchParameter(property, of: unit, node: node.id)
            selected = [parameter]
            if let given = request.value {
                guard parameter.isWritable else {
                    throw ControlFailure(.readOnly, field: "property", "\(node.id): \(parameter.label) (\(parameter.uri)) is not patch:writable")
                }
                let value = try Self.patchValue(given, for: parameter, node: node.id)
                do { try unit.setPatchParameter(parameter.uri, to: value) } catch {
                    throw ControlFailure(.failed, field: "value", "\(node.id): \(error.message)")
                }
                refreshPatchValues(unit) { $0[parameter.uri] == value }
                return .patch(.init(node: node.id, properties: selected.map { Self.reading($0, of: unit) }))
            }
        }
        let readable = Set(selected.filter(\.isReadable).map(\.uri))
        refreshPatchValues(unit) { values in readable.allSatisfy { values[$0] != nil } }
        return .patch(.init(node: node.id, properties: selected.map { Self.reading($0, of: unit) }))
    }

    /// Asks the plugin for its values (patch:Get) and reads its atom outputs until `done` or
    /// 250 ms have passed (at once when the graph is not rendering).
    private func refreshPatchValues(_ unit: any LV2PatchSurface, until done: ([String: LV2PatchValue]) -> Bool) {
        try? unit.requestPatchValues()
        for _ in 0..<(pipeline.graph.isRunning ? 250 : 1) {
            unit.drainAtomOutputs()
            if done(unit.patchValues) { return }
            usleep(1000)
        }
    }

    static func patchParameter(_ property: PatchRequest.Property, of unit: any LV2PatchSurface, node: String) throws -> LV2PatchParameter {
        let parameters = unit.plugin.patchParameters
        switch property {
        case .urid(let urid):
            guard let uri = unit.world.urids.uri(of: urid), let parameter = parameters.first(where: { $0.uri == uri }) else {
                throw ControlFailure(
                    .unknownProperty, field: "property",
                    "\(node): URID \(urid) is none of its patch properties (\(parameters.map { "\($0.label) = \(unit.world.urids.map($0.uri))" }.joined(separator: ", ")))")
            }
            return parameter
        case .name(let name):
            if let parameter = parameters.first(where: { $0.uri == name })
                ?? parameters.first(where: { $0.label.lowercased() == name.lowercased() })
            {
                return parameter
            }
            let labels = parameters.map(\.label)
            throw ControlFailure(
                .unknownProperty, field: "property",
                "\(node) has no patch property '\(Diagnostic.excerpt(name))'\(suggestion(for: String(name.prefix(64)), in: labels)) (by label: \(labels.joined(separator: ", ")); or by URI or URID)")
        }
    }

    /// The value as the property's range (its atom type) takes it.
    static func patchValue(_ given: ControlValue, for parameter: LV2PatchParameter, node: String) throws -> LV2PatchValue {
        let type = parameter.range.map { $0.split(separator: "#").last.map(String.init) ?? $0 }
        func number() throws -> Double {
            switch given {
            case .number(let value): return value
            case .text(let text):
                if let value = Double(text.trimmingCharacters(in: .whitespaces)), value.isFinite { return value }
            case .flag(let flag): return flag ? 1 : 0
            }
            throw ControlFailure(.badField, field: "value", "\(node): \(parameter.label) takes a number (\(type ?? "atom:Float")), not \(given)")
        }
        func whole(_ range: ClosedRange<Double>) throws -> Double {
            let value = try number()
            guard value == value.rounded(), range.contains(value) else {
                throw ControlFailure(.outOfRange, field: "value", "\(node): \(parameter.label) takes a whole number (\(type ?? "")), not \(value)")
            }
            return value
        }
        func text() -> String {
            switch given {
            case .text(let text): text
            case .number(let value): "\(value)"
            case .flag(let flag): flag ? "true" : "false"
            }
        }
        switch type {
        case "Float", nil: return .float(Float(try number()))
        case "Double": return .double(try number())
        case "Int": return .int(Int32(try whole(Double(Int32.min)...Double(Int32.max))))
        case "Long": return .long(Int64(try whole(-9.0e15...9.0e15)))
        case "Bool":
            if case .flag(let flag) = given { return .bool(flag) }
            if case .text(let word) = given, let flag = ["on": true, "off": false, "true": true, "false": false, "yes": true, "no": false][word.lowercased()] {
                return .bool(flag)
            }
            return .bool(try number() != 0)
        case "String": return .string(text())
        case "Path": return .path(text())
        case "URID", "URI": return .urid(text())
        default:
            throw ControlFailure(.badField, field: "value", "\(node): \(parameter.label) takes \(parameter.range ?? "?"), which Sonora does not set")
        }
    }

    static func reading(_ parameter: LV2PatchParameter, of unit: any LV2PatchSurface) -> ControlResponse.PatchProperty {
        let value: ControlResponse.PatchValue? =
            switch unit.patchValues[parameter.uri] {
            case .int(let v): .number(Double(v))
            case .long(let v): .number(Double(v))
            case .float(let v): .number(Double(v))
            case .double(let v): .number(v)
            case .bool(let v): .flag(v)
            case .string(let v), .path(let v), .urid(let v): .text(v)
            case nil: nil
            }
        return ControlResponse.PatchProperty(
            uri: parameter.uri, label: parameter.label, urid: unit.world.urids.map(parameter.uri), type: parameter.range,
            writable: parameter.isWritable, readable: parameter.isReadable, minimum: parameter.minimum, maximum: parameter.maximum,
            value: value)
    }
}
