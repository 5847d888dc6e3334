import SonoraUnits

extension NodeKind {
    /// The multichannel mixer, with its number of inputs.
    public static let mixer = NodeKind(
        name: "MultiChannelMixer", aliases: ["mixer"],
        summary: "mixes any number of inputs: volume, pan and enable per input, output volume, metering",
        options: [NodeOption("inputs", .integer(1...64), "number of inputs (default 1)")]
    ) { build in
        let mixer = MultiChannelMixerUnit()
        if let inputs = build.option("inputs")?.value.integer {
            do { try mixer.setElementCount(inputs, scope: .input) } catch { build.error(at: "inputs", error) }
        }
        return mixer
    }
}
