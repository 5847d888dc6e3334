import SonoraCore

/// One input copied to every output element ('aufc'/'splt', as Core Audio's
/// AUSplitter). The input is pulled once per cycle however many outputs render.
/// Outputs narrower than the input, together as wide as it, take its channels in turn
/// instead (the reverse of `MergerUnit`: a stereo input to two mono outputs).
public final class SplitterUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .formatConverter, subType: "splt", manufacturer: .apple)

    /// Per output element, its first input channel when splitting; nil when copying.
    private var firstChannels: UnsafeMutablePointer<Int>?

    public init(outputs: Int = 2) {
        super.init(
            description: Self.componentDescription, name: "Splitter", inputs: 1, outputs: outputs,
            outputCountIsWritable: true)
    }

    deinit { firstChannels?.deallocate() }

    /// Whether the outputs split the input's channels apart rather than copy it.
    public var splitsChannels: Bool {
        guard let input = try? streamFormat(scope: .input, element: 0).channelsPerFrame else { return false }
        let widths = (0..<elementCount(.output)).map { (try? streamFormat(scope: .output, element: $0).channelsPerFrame) ?? 0 }
        return widths.contains { $0 != input } && widths.reduce(0, +) == input
    }

    public override func validateFormats() throws(AudioError) {
        try super.validateFormats()
        let channels = try streamFormat(scope: .input, element: 0).channelsPerFrame
        var total: UInt32 = 0
        var copies = true
        for bus in 0..<elementCount(.output) {
            let width = try streamFormat(scope: .output, element: bus).channelsPerFrame
            total += width
            if width != channels { copies = false }
        }
        guard copies || total == channels else {
            throw AudioError(
                .failedInitialization,
                "Splitter: outputs must each have the input's \(channels) channels (copies), or together \(channels) (split apart); they have \(total) together")
        }
    }

    public override func allocateRenderResources() throws(AudioError) {
        firstChannels?.deallocate()
        firstChannels = nil
        guard splitsChannels else { return }
        let starts = UnsafeMutablePointer<Int>.allocate(capacity: elementCount(.output))
        var next = 0
        for bus in 0..<elementCount(.output) {
            starts[bus] = next
            next += Int(try streamFormat(scope: .output, element: bus).channelsPerFrame)
        }
        firstChannels = starts
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        if let firstChannels {
            context.output.copy(from: context.input(0).channels(from: firstChannels[context.bus], count: context.output.channelCount))
        } else {
            context.output.copy(from: context.input(0))
        }
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
