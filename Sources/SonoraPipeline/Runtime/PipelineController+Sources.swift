import SonoraUnits

/// A node's source on the control socket: `NODE.SOURCE` (`scene.bell`, or `scene.source2`
/// by its input element) names one input element of a node whose kind has sources (a
/// mixer3d). Its parameters are the unit's input-scope parameters of that element, plus
/// the kind's source parameters (`position`).
extension PipelineController {
    struct SourceAddress {
        var node: PipelineNode
        var name: String
        var element: Int
        var kind: NodeKind?
    }

    /// What a selector addresses once `NODE.SOURCE` is resolved.
    struct RoutedSelector {
        var selector: ControlRequest.ParameterSelector
        var source: SourceAddress?
        /// The kind's source parameter the selector names (`position`), if it names one.
        var parameter: SourceParameter?
    }

    /// The source `id` names, nil when `id` is a node or names nothing with sources (the
    /// caller then reports an unknown node). A node with sources and an unknown source
    /// name is refused here, listing the sources.
    func source(_ id: String) throws(ControlFailure) -> SourceAddress? {
        guard pipeline.node(id) == nil else { return nil }
        // Node ids may hold dots themselves: try each split, the longest node id first.
        var end = id.endIndex
        while let dot = id[..<end].lastIndex(of: ".") {
            end = dot
            guard let node = pipeline.node(String(id[..<dot])), !node.sources.isEmpty else { continue }
            let name = String(id[id.index(after: dot)...])
            let element = node.sources.firstIndex { $0.lowercased() == name.lowercased() }
                ?? (name.lowercased().hasPrefix("source") ? Int(name.dropFirst(6)).flatMap { node.sources.indices.contains($0) ? $0 : nil } : nil)
            guard let element else {
                let names = node.sources.enumerated().map { $1 == "source\($0)" ? $1 : "\($1) (source\($0))" }
                throw ControlFailure(.unknownNode, field: "node", "\(node.id) has no source '\(Diagnostic.excerpt(name))'\(suggestion(for: String(name.prefix(64)), in: node.sources)) (sources: \(names.joined(separator: ", ")))")
            }
            return SourceAddress(node: node, name: node.sources[element], element: element, kind: NodeKindCatalog.standard.kind(named: node.kind))
        }
        return nil
    }

    func route(_ selector: ControlRequest.ParameterSelector) throws(ControlFailure) -> RoutedSelector {
        guard let source = try source(selector.node) else { return RoutedSelector(selector: selector) }
        let label = "\(source.node.id).\(source.name)"
        if let scope = selector.scope, scope != .input {
            throw ControlFailure(.badField, field: "scope", "\(label) is input \(source.element) of \(source.node.id): its parameters are in the input scope, not \(scope)")
        }
        if let element = selector.element, element != source.element {
            throw ControlFailure(.badField, field: "element", "\(label) is input \(source.element) of \(source.node.id), not element \(element); leave \"element\" out")
        }
        if case .name(let name) = selector.parameter,
           let parameter = source.kind?.sourceParameters.first(where: { $0.name.lowercased() == name.lowercased() })
        {
            return RoutedSelector(selector: selector, source: source, parameter: parameter)
        }
        let inner = ControlRequest.ParameterSelector(node: source.node.id, parameter: selector.parameter, scope: .input, element: source.element)
        return RoutedSelector(selector: inner, source: source)
    }

    func reading(_ source: SourceAddress, _ parameter: SourceParameter, as id: String) throws(ControlFailure) -> ControlResponse.ParameterReading {
        let values: [Double]
        do { values = try parameter.read(source.node.unit, source.element) } catch {
            throw ControlFailure(.failed, "\(id): \(error)")
        }
        // One number for scripts that read `value`: the size of the vector (a position's distance).
        let size = values.count == 1 ? values[0] : values.reduce(0) { $0 + $1 * $1 }.squareRoot()
        return .init(node: id, param: parameter.name, scope: AudioUnitScope.input.description, element: source.element,
                     value: size, unit: parameter.unit, values: values)
    }

    func set(_ source: SourceAddress, _ parameter: SourceParameter, to given: ControlValue, ramp: Double?) throws(ControlFailure) {
        let text: String
        switch given {
        case .text(let string):
            guard string.utf8.count <= 200 else {
                throw ControlFailure(.badField, field: "value", "value '\(Diagnostic.excerpt(string))' is \(string.utf8.count) bytes; \(parameter.form)")
            }
            text = string
        case .number(let number): text = "\(number)"
        case .flag(let on): text = on ? "true" : "false"
        }
        let frames = Int((ramp ?? 0) * Double(pipeline.configuration.engine.sampleRate))
        do {
            try parameter.write(source.node.unit, source.element, text, frames)
        } catch let problem as ValueProblem {
            throw ControlFailure(problem.message.contains("out of range") ? .outOfRange : .badField, field: "value", "\(source.node.id).\(source.name) \(parameter.name): \(problem.message)")
        } catch {
            throw ControlFailure(.failed, "\(source.node.id).\(source.name): \(error)")
        }
    }

    /// `params NODE.SOURCE`: the unit's input-scope parameters of the source's element.
    func summaries(of source: SourceAddress) -> [ControlResponse.ParameterSummary] {
        source.node.unit.parameterDefinitions.filter { $0.scope == .input }.map { summary($0, unit: source.node.unit, element: source.element) }
    }
}
