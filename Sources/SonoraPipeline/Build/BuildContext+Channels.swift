import SonoraCore
import SonoraUnits

/// Channels per node per element: declared (`channels:`) or inferred from what feeds the
/// node, so a mono source makes a mono chain and a merger's output is as wide as its inputs
/// together. Nodes are built sources first, so each knows its sources' widths when made.
extension BuildContext {
    /// The config's nodes, every node after the nodes that feed it (those in a cycle, which
    /// `connect` refuses, last in file order).
    var nodesInBuildOrder: [NodeSpec] {
        let specs = configuration.nodes
        let ids = Set(specs.map(\.id))
        var pending = Dictionary(specs.map { ($0.id, 0) }, uniquingKeysWith: { a, _ in a })
        for connection in configuration.connections where ids.contains(connection.from) && ids.contains(connection.to) {
            pending[connection.to, default: 0] += 1
        }
        var ordered: [NodeSpec] = []
        var done: Set<String> = []
        var progressed = true
        while progressed {
            progressed = false
            for spec in specs where !done.contains(spec.id) && pending[spec.id] == 0 {
                ordered.append(spec)
                done.insert(spec.id)
                progressed = true
                for connection in configuration.connections where connection.from == spec.id && ids.contains(connection.to) {
                    pending[connection.to, default: 0] -= 1
                }
            }
        }
        return ordered + specs.filter { !done.contains($0.id) }
    }

    /// Width of each input element of `spec` as its source gives it, for sources built
    /// already (`input`: the engine's channels).
    func upstreamWidths(of spec: NodeSpec) -> [Int: Int] {
        var widths: [Int: Int] = [:]
        for connection in configuration.connections where connection.to == spec.id {
            if connection.from == "input" {
                widths[connection.toInput] = configuration.engine.channels
            } else if let source = nodes.first(where: { $0.id == connection.from }) ?? keptNodes.first(where: { $0.id == connection.from }),
                connection.fromBus >= 0, connection.fromBus < source.unit.elementCount(.output),
                let format = try? source.unit.streamFormat(scope: .output, element: connection.fromBus)
            {
                widths[connection.toInput] = Int(format.channelsPerFrame)
            }
        }
        return widths
    }

    /// Sets the node's formats at the engine's rate: each input as declared, else as its
    /// source gives it, else the engine's width; each output as declared, else as the kind
    /// says (a channel map: its map's length), else a merger's inputs summed, else the
    /// widest input (the engine's width for a node without inputs).
    mutating func applyChannels(_ unit: AudioUnit, kind: NodeKind, _ spec: NodeSpec, upstream: [Int: Int], kindOutputs: [Int]?) {
        let engine = configuration.engine.channels
        let declared = spec.channels
        var inputWidths: [Int] = []
        for element in 0..<unit.elementCount(.input) {
            inputWidths.append(declared?.input?.width(element) ?? upstream[element] ?? engine)
        }
        let inferredOutput: Int =
            unit is MergerUnit ? inputWidths.reduce(0, +) : (inputWidths.max() ?? engine)
        var outputWidths: [Int] = []
        for element in 0..<unit.elementCount(.output) {
            outputWidths.append(declared?.output?.width(element) ?? kindOutputs?[safe: element] ?? inferredOutput)
        }
        for (scope, widths) in [(AudioUnitScope.input, inputWidths), (.output, outputWidths)] {
            for (element, width) in widths.enumerated() {
                let elementFormat = StreamFormat.canonical(sampleRate: format.sampleRate, channels: width)
                do { try unit.setStreamFormat(elementFormat, scope: scope, element: element) } catch {
                    self.error(declared?.location ?? spec.location, "node '\(spec.id)' (\(kind.name)) does not take \(width) channel\(width == 1 ? "" : "s") on \(scope) \(element): \(error.message)")
                }
            }
        }
        if let declared {
            for (scope, widths, written) in [("input", inputWidths, declared.input), ("output", outputWidths, declared.output)] {
                if case .perElement(let list)? = written, list.count != widths.count {
                    error(declared.location, "node '\(spec.id)' (\(kind.name)) has \(widths.count) \(scope) element\(widths.count == 1 ? "" : "s"), but `channels` lists \(list.count) \(scope) width\(list.count == 1 ? "" : "s")")
                }
            }
        }
    }

    /// A connection between buses of different widths is an error naming both ends, with
    /// the node that would make them fit. Returns whether the widths agree.
    mutating func checkWidths(_ connection: ConnectionSpec, from source: AudioGraph.Node, to destination: AudioGraph.Node) -> Bool {
        guard let sourceUnit = try? graph.unit(source), let destinationUnit = try? graph.unit(destination),
            connection.fromBus >= 0, connection.fromBus < sourceUnit.elementCount(.output),
            connection.toInput >= 0, connection.toInput < destinationUnit.elementCount(.input),
            let from = try? sourceUnit.streamFormat(scope: .output, element: connection.fromBus),
            let to = try? destinationUnit.streamFormat(scope: .input, element: connection.toInput)
        else { return true }
        let have = Int(from.channelsPerFrame)
        let want = Int(to.channelsPerFrame)
        guard have != want else { return true }
        func channels(_ count: Int) -> String { "\(count) channel\(count == 1 ? "" : "s")" }
        let map = (0..<want).map { have == 1 ? 0 : ($0 < have ? $0 : -1) }
        let destinationName = connection.to == "output" ? "`output` (the device, engine.channels \(want))" : "'\(connection.to)' input \(connection.toInput) (\(channels(want)))"
        let sourceName = connection.from == "input" ? "`input` (the device, \(channels(have)))" : "'\(connection.from)' output \(connection.fromBus) (\(channels(have)))"
        error(
            connection.location,
            "\(sourceName) cannot feed \(destinationName): the widths differ; place a channel map between them, such as {id: \(connection.from)_to_\(connection.to), kind: channel_map, map: [\(map.map(String.init).joined(separator: ", "))]}, or a Converter (it averages many channels into one), or declare `channels:` so they agree")
        return false
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { index >= 0 && index < count ? self[index] : nil }
}
