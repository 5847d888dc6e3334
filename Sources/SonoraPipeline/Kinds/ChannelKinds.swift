import SonoraCore
import SonoraUnits

extension NodeKind {
    /// One input to several outputs: each a copy of the input, or — outputs declared
    /// narrower (`channels: {output: [1, 1]}`) — the input's channels in turn, split apart.
    public static let splitter = NodeKind(
        name: "Splitter", aliases: ["splitter"],
        summary: "one input to several outputs: copies, or the input's channels split apart when `channels: {output: [...]}` adds up to the input's width",
        options: [NodeOption("outputs", .integer(1...64), "number of outputs (default 2)")]
    ) { build in
        let splitter = SplitterUnit()
        if let outputs = build.option("outputs")?.value.integer {
            do { try splitter.setElementCount(outputs, scope: .output) } catch { build.error(at: "outputs", error) }
        }
        return splitter
    }

    /// Several inputs' channels side by side in one wider output (two mono inputs: stereo).
    public static let merger = NodeKind(
        name: "Merger", aliases: ["merger"],
        summary: "several inputs' channels side by side in one output, as wide as the inputs together (two mono inputs make stereo)",
        options: [NodeOption("inputs", .integer(1...64), "number of inputs (default 2)")]
    ) { build in
        let merger = MergerUnit()
        if let inputs = build.option("inputs")?.value.integer {
            do { try merger.setElementCount(inputs, scope: .input) } catch { build.error(at: "inputs", error) }
        }
        return merger
    }

    /// Output channel i takes input channel `map[i]` (-1: silence): [1, 0] swaps a pair,
    /// [0, 0] makes mono stereo, [0] keeps the left of a pair.
    public static let channelMap = NodeKind(
        name: "channel_map", aliases: ["ChannelMap"],
        summary: "reorders, copies or drops channels: output channel i takes input channel map[i], -1 for silence ([1, 0] swaps, [0, 0] mono to stereo)",
        options: [NodeOption("map", .integers(-1...31), required: true, "one entry per output channel: the input channel it takes (from 0), or -1 for silence")]
    ) { build in
        guard let map = build.option("map")?.value.integers else { return nil }
        let inputs = build.inputWidth(0)
        if let bad = map.first(where: { $0 >= inputs }) {
            build.error(at: "map", "map entry \(bad) names no input channel: its input has \(inputs) channel\(inputs == 1 ? "" : "s") (0…\(inputs - 1), or -1 for silence)")
            return nil
        }
        let converter = ConverterUnit()
        converter.channelMap = map
        build.outputChannels = [map.count]
        return converter
    }
}
