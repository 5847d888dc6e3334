import SonoraCore
import SonoraDSP

/// Gain, pan and mute for any channel count ('aufx'/'gain', Sonora's). Gain
/// changes and ramps are applied per sample; pan is a stereo balance (turning
/// one side down), ignored for other channel counts.
public final class GainUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .effect, subType: "gain", manufacturer: .sonora)

    public enum Parameter {
        public static let gain: AudioUnitParameterID = 0
        public static let mute: AudioUnitParameterID = 1
        public static let pan: AudioUnitParameterID = 2
    }

    @exclusivity(unchecked) private var gainSlot = 0
    @exclusivity(unchecked) private var muteSlot = 0
    @exclusivity(unchecked) private var panSlot = 0

    public override var hasChannelLayouts: Bool { true }

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
                AudioUnitParameterDefinition(
                    Parameter.pan,
                    AudioUnitParameterInfo(
                        name: "Pan", identifier: "pan", unit: .pan, minValue: -1, maxValue: 1, defaultValue: 0)),
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
        panSlot = try parameterSlot(ParameterAddress(Parameter.pan))
    }

    /// Balance: panning right turns the left channel down, and vice versa.
    @inline(__always)
    static func balance(_ pan: Float, channel: Int) -> Float {
        channel == 0 ? min(1, 1 - pan) : min(1, 1 + pan)
    }

    /// The gain a steady slice scales by (before balance).
    @inline(__always)
    static func linearGain(decibels: Float, muted: Bool) -> Float {
        muted ? 0 : Decibels.toLinear(decibels)
    }

    /// A render plan's steady cycle: `process` without a ramp, from the compact slot
    /// `steadySlot(_:input:output:)` filled (gain in dB, mute, pan). Same arithmetic.
    @inline(__always)
    static func renderSteady(_ slot: UnsafePointer<SteadySlot>, frameCount: Int) {
        let gain = linearGain(decibels: slot.pointee.value0, muted: slot.pointee.value1 >= 0.5)
        if slot.pointee.channelCount == 2 {
            let pan = slot.pointee.value2
            Mixing.copy(slot.pointee.input0!, to: slot.pointee.output0!, count: frameCount, gain: gain * balance(pan, channel: 0))
            Mixing.copy(slot.pointee.input1!, to: slot.pointee.output1!, count: frameCount, gain: gain * balance(pan, channel: 1))
        } else {
            Mixing.copy(slot.pointee.input0!, to: slot.pointee.output0!, count: frameCount, gain: gain)
        }
    }

    override func steadySlot(_ core: UnsafeMutablePointer<RealtimeCore>, input: AudioBufferList, output: AudioBufferList) -> SteadySlot? {
        let channels = output.channelCount
        guard channels == 1 || channels == 2, input.channelCount == channels else { return nil }
        var slot = SteadySlot()
        slot.kernel = .gain
        slot.channelCount = Int32(channels)
        slot.input0 = input.samples(0)
        slot.output0 = output.samples(0)
        if channels == 2 {
            slot.input1 = input.samples(1)
            slot.output1 = output.samples(1)
        }
        slot.value0 = core.pointee.ramps[gainSlot].value
        slot.value1 = core.pointee.ramps[muteSlot].value
        slot.value2 = core.pointee.ramps[panSlot].value
        return slot
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        let input = context.input(0)
        let output = context.output
        let muted = context.parameter(muteSlot) >= 0.5
        let pan = context.parameter(panSlot)
        let stereo = output.channelCount == 2
        if context.isRamping(gainSlot) {
            let decibels = context.parameterValues(gainSlot)
            for channel in 0..<output.channelCount {
                let source = input.samples(channel)
                let destination = output.samples(channel)
                let side = muted ? 0 : stereo ? Self.balance(pan, channel: channel) : 1
                for frame in 0..<context.frameCount {
                    destination[frame] = source[frame] * Decibels.toLinear(decibels[frame]) * side
                }
            }
        } else {
            let gain = Self.linearGain(decibels: context.parameter(gainSlot), muted: muted)
            for channel in 0..<output.channelCount {
                let side = stereo ? Self.balance(pan, channel: channel) : 1
                Mixing.copy(input.samples(channel), to: output.samples(channel), count: context.frameCount, gain: gain * side)
            }
        }
        return .noError
    }
}
