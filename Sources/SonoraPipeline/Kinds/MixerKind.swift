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
        // A pipeline's meters are read through `ctl meters`: metering on for every element (Core Audio's default is off).
        try? mixer.setProperty(.meteringMode, scope: .output, element: 0, to: .flag(true))
        for element in 0..<mixer.elementCount(.input) {
            try? mixer.setProperty(.meteringMode, scope: .input, element: element, to: .flag(true))
        }
        return mixer
    }
}
