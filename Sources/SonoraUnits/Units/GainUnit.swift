import SonoraCore
import SonoraDSP

/// Gain and mute for any channel count ('aufx'/'gain', Sonora's). Gain changes
/// and ramps are applied per sample.
public final class GainUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .effect, subType: "gain", manufacturer: .sonora)

    public enum Parameter {
        public static let gain: AudioUnitParameterID = 0
        public static let mute: AudioUnitParameterID = 1
    }

    @exclusivity(unchecked) private var gainSlot = 0
    @exclusivity(unchecked) private var muteSlot = 0

    public init() {
        super.init(
            description: Self.componentDescription, name: "Gain", inputs: 1, outputs: 1,
            parameters: [
                AudioUnitParameterDefinition(
                    Parameter.gain,
                    AudioUnitParameterInfo(
                        name: "Gain", identifier: "gain", unit: .decibels, minValue: -120, maxValue: 24, defaultValue: 0,
                        flags: [.readWrite, .canRamp])),
                AudioUnitParameterDefinition(
                    Parameter.mute,
                    AudioUnitParameterInfo(
                        name: "Mute", identifier: "mute", unit: .boolean, minValue: 0, maxValue: 1, defaultValue: 0)),
            ])
    }

    public override func validateFormats() throws(AudioError) {
        try super.validateFormats()
        let input = try streamFormat(scope: .input, element: 0)
        let output = try streamFormat(scope: .output, element: 0)
        guard input.channelsPerFrame == output.channelsPerFrame else {
            throw AudioError(.failedInitialization, "Gain: input has \(input.channelsPerFrame) channels, output \(output.channelsPerFrame)")
        }
    }

    public override var canProcessInPlace: Bool { true }

    public override func allocateRenderResources() throws(AudioError) {
        gainSlot = try parameterSlot(ParameterAddress(Parameter.gain))
        muteSlot = try parameterSlot(ParameterAddress(Parameter.mute))
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        let input = context.input(0)
        let output = context.output
        let muted = context.parameter(muteSlot) >= 0.5
        if context.isRamping(gainSlot) {
            let decibels = context.parameterValues(gainSlot)
            for channel in 0..<output.channelCount {
                let source = input.samples(channel)
                let destination = output.samples(channel)
                for frame in 0..<context.frameCount {
                    destination[frame] = muted ? 0 : source[frame] * Decibels.toLinear(decibels[frame])
                }
            }
        } else {
            let gain = muted ? 0 : Decibels.toLinear(context.parameter(gainSlot))
            for channel in 0..<output.channelCount {
                Mixing.copy(input.samples(channel), to: output.samples(channel), count: context.frameCount, gain: gain)
            }
        }
        return .noError
    }
}
