import SonoraCore
import SonoraDSP

/// A pure delay of a whole number of frames ('aufx'/'sdly', as Core Audio's
/// AUSampleDelay): for latency tests and for aligning parallel paths.
public final class SampleDelayUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .effect, subType: "sdly", manufacturer: .apple)

    public enum Parameter {
        /// kSampleDelayParam_DelayFrames.
        public static let delayFrames: AudioUnitParameterID = 0
    }

    public static let maximumDelay = 192_000

    @exclusivity(unchecked) private var lines: UnsafeMutablePointer<DelayLine>?
    @exclusivity(unchecked) private var lineCount = 0
    @exclusivity(unchecked) private var delaySlot = 0

    public init() {
        super.init(
            description: Self.componentDescription, name: "SampleDelay", inputs: 1, outputs: 1,
            parameters: [
                AudioUnitParameterDefinition(
                    Parameter.delayFrames,
                    AudioUnitParameterInfo(
                        name: "Delay Frames", identifier: "delayFrames", unit: .sampleFrames, minValue: 0,
                        maxValue: Float(Self.maximumDelay), defaultValue: 0)),
            ])
    }

    public override var latency: Double {
        let rate = (try? streamFormat(scope: .output, element: 0).sampleRate) ?? 48000
        return Double((try? parameter(Parameter.delayFrames)) ?? 0) / rate
    }

    public override var canProcessInPlace: Bool { true }

    public override func allocateRenderResources() throws(AudioError) {
        delaySlot = try parameterSlot(ParameterAddress(Parameter.delayFrames))
        lineCount = Int(try streamFormat(scope: .input, element: 0).channelsPerFrame)
        lines = .allocate(capacity: lineCount)
        for channel in 0..<lineCount { (lines! + channel).initialize(to: DelayLine(maximumDelay: Self.maximumDelay)) }
    }

    public override func deallocateRenderResources() {
        lines?.deinitialize(count: lineCount)
        lines?.deallocate()
        lines = nil
    }

    public override func resetRenderState() {
        guard let lines else { return }
        for channel in 0..<lineCount { lines[channel].reset() }
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        guard let lines else { return .uninitialized }
        let delay = Int(context.parameter(delaySlot))
        let input = context.input(0)
        for channel in 0..<min(lineCount, context.output.channelCount) {
            let samples = context.output.samples(channel)
            copySamples(from: input.samples(channel), to: samples, count: context.frameCount)
            lines[channel].delay = delay
            lines[channel].process(samples, count: context.frameCount)
        }
        return .noError
    }
}
