import SonoraCore

/// One input copied to every output element ('aufc'/'splt', as Core Audio's
/// AUSplitter). The input is pulled once per cycle however many outputs render.
public final class SplitterUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .formatConverter, subType: "splt", manufacturer: .apple)

    public init(outputs: Int = 2) {
        super.init(
            description: Self.componentDescription, name: "Splitter", inputs: 1, outputs: outputs,
            outputCountIsWritable: true)
    }

    public override func validateFormats() throws(AudioError) {
        try super.validateFormats()
        let channels = try streamFormat(scope: .input, element: 0).channelsPerFrame
        for bus in 0..<elementCount(.output) where try streamFormat(scope: .output, element: bus).channelsPerFrame != channels {
            throw AudioError(.failedInitialization, "Splitter: output \(bus) must have the input's \(channels) channels")
        }
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        context.output.copy(from: context.input(0))
        return .noError
    }
}

/// Several inputs combined channel after channel into one output ('aufc'/'merg',
/// as Core Audio's AUMerger): two mono inputs make a stereo output.
public final class MergerUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .formatConverter, subType: "merg", manufacturer: .apple)

    public init(inputs: Int = 2) {
        super.init(
            description: Self.componentDescription, name: "Merger", inputs: inputs, outputs: 1,
            format: .canonical(sampleRate: 48000, channels: 1), inputCountIsWritable: true)
        try? setStreamFormat(.canonical(sampleRate: 48000, channels: inputs), scope: .output, element: 0)
    }

    public override func validateFormats() throws(AudioError) {
        try super.validateFormats()
        var total: UInt32 = 0
        for element in 0..<elementCount(.input) { total += try streamFormat(scope: .input, element: element).channelsPerFrame }
        let output = try streamFormat(scope: .output, element: 0).channelsPerFrame
        guard total == output else {
            throw AudioError(.failedInitialization, "Merger: inputs carry \(total) channels in all, output has \(output)")
        }
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        var outputChannel = 0
        for element in 0..<context.inputCount {
            let input = context.input(element)
            for channel in 0..<input.channelCount {
                copySamples(from: input.samples(channel), to: context.output.samples(outputChannel), count: context.frameCount)
                outputChannel += 1
            }
        }
        return .noError
    }
}
