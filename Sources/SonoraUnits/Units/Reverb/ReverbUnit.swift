import SonoraCore
import SonoraDSP

/// A room reverb with EFX's standard reverb parameters ('aufx'/'efxr', Sonora's): mono or
/// stereo in (summed), mono or stereo out, wet only — made to sit on an auxiliary send (an
/// OpenAL effect slot), and usable anywhere a unit is.
///
/// Early reflections: four taps after the reflections delay. Late reverb: two diffusing
/// all-passes into an eight-line feedback delay network (Hadamard feedback), each line's
/// loss set so the decay time is the parameter exactly at low frequencies, and a one-pole
/// damping per line so the decay at 5 kHz is decay time × HF ratio (ratios above 1 decay as
/// 1). The late reverb is normalised so its energy per unit of input energy is about the
/// late gain's square. Parameter IDs are OpenAL's AL_REVERB_… values.
///
/// Not modelled: air absorption (AL_REVERB_AIR_ABSORPTION_GAINHF) and the decay HF limit,
/// which OpenAL Soft applies from distance; the room rolloff factor is the send's business.
public final class ReverbUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .effect, subType: "efxr", manufacturer: .sonora)

    /// OpenAL's AL_REVERB_… IDs; ranges and defaults as EFX's.
    public enum Parameter {
        public static let density: AudioUnitParameterID = 1
        public static let diffusion: AudioUnitParameterID = 2
        public static let gain: AudioUnitParameterID = 3
        public static let gainHF: AudioUnitParameterID = 4
        public static let decayTime: AudioUnitParameterID = 5
        public static let decayHFRatio: AudioUnitParameterID = 6
        public static let reflectionsGain: AudioUnitParameterID = 7
        public static let reflectionsDelay: AudioUnitParameterID = 8
        public static let lateReverbGain: AudioUnitParameterID = 9
        public static let lateReverbDelay: AudioUnitParameterID = 10
        public static let airAbsorptionGainHF: AudioUnitParameterID = 11
        public static let roomRolloffFactor: AudioUnitParameterID = 12
        public static let decayHFLimit: AudioUnitParameterID = 13
    }

    /// (id, name, identifier, unit, range, default), EFX's table.
    static let table: [(AudioUnitParameterID, String, String, AudioUnitParameterUnit, ClosedRange<Float>, Float)] = [
        (Parameter.density, "Density", "density", .generic, 0...1, 1),
        (Parameter.diffusion, "Diffusion", "diffusion", .generic, 0...1, 1),
        (Parameter.gain, "Gain", "gain", .linearGain, 0...1, 0.32),
        (Parameter.gainHF, "Gain HF", "gainHF", .linearGain, 0...1, 0.89),
        (Parameter.decayTime, "Decay Time", "decayTime", .seconds, 0.1...20, 1.49),
        (Parameter.decayHFRatio, "Decay HF Ratio", "decayHFRatio", .ratio, 0.1...2, 0.83),
        (Parameter.reflectionsGain, "Reflections Gain", "reflectionsGain", .linearGain, 0...3.16, 0.05),
        (Parameter.reflectionsDelay, "Reflections Delay", "reflectionsDelay", .seconds, 0...0.3, 0.007),
        (Parameter.lateReverbGain, "Late Reverb Gain", "lateReverbGain", .linearGain, 0...10, 1.26),
        (Parameter.lateReverbDelay, "Late Reverb Delay", "lateReverbDelay", .seconds, 0...0.1, 0.011),
        (Parameter.airAbsorptionGainHF, "Air Absorption Gain HF", "airAbsorptionGainHF", .linearGain, 0.892...1, 0.994),
        (Parameter.roomRolloffFactor, "Room Rolloff Factor", "roomRolloffFactor", .generic, 0...10, 0),
        (Parameter.decayHFLimit, "Decay HF Limit", "decayHFLimit", .boolean, 0...1, 1),
    ]

    /// EFX's range of parameter `id` (nil: no such parameter).
    public static func range(of id: AudioUnitParameterID) -> ClosedRange<Float>? { table.first { $0.0 == id }?.4 }

    private var slots: [Int] = []
    @exclusivity(unchecked) private var kernel: UnsafeMutablePointer<ReverbKernel>?

    public init() {
        super.init(
            description: Self.componentDescription, name: "Reverb", inputs: 1, outputs: 1,
            parameters: Self.table.map { id, name, identifier, unit, range, value in
                AudioUnitParameterDefinition(id, AudioUnitParameterInfo(
                    name: name, identifier: identifier, unit: unit, minValue: range.lowerBound, maxValue: range.upperBound,
                    defaultValue: value, flags: .readWrite))
            })
        inputs[0].format = .canonical(sampleRate: 48_000, channels: 1)
        outputs[0].format = .canonical(sampleRate: 48_000, channels: 2)
    }

    /// Mono or stereo on either side.
    public override func supports(_ format: StreamFormat, scope: AudioUnitScope, element: AudioUnitElement) -> Bool {
        format.isCanonical && format.validationProblems.isEmpty && (1...2).contains(format.channelsPerFrame)
    }

    /// The longest decay rings this long (to −60 dB) after the input stops.
    public override var tailTime: Double { 20 }

    public override func allocateRenderResources() throws(AudioError) {
        var made: [Int] = []
        for entry in Self.table { made.append(try parameterSlot(ParameterAddress(entry.0))) }
        slots = made
        let output = try streamFormat(scope: .output, element: 0)
        let state = UnsafeMutablePointer<ReverbKernel>.allocate(capacity: 1)
        state.initialize(to: ReverbKernel(sampleRate: output.sampleRate, maximumFrames: maximumFramesPerSlice, parameterSlots: made))
        kernel = state
    }

    public override func deallocateRenderResources() {
        if let kernel {
            kernel.pointee.deallocate()
            kernel.deinitialize(count: 1)
            kernel.deallocate()
        }
        kernel = nil
    }

    public override func resetRenderState() { kernel?.pointee.reset() }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        guard let kernel else { return .uninitialized }
        let frames = context.frameCount
        let input = context.input(0)
        let output = context.output
        kernel.pointee.update(context)
        let mono = kernel.pointee.inputScratch
        if input.channelCount == 1 {
            mono.update(from: input.samples(0), count: frames)
        } else {
            Mixing.copy(input.samples(0), to: mono, count: frames, gain: 0.70710678)
            Mixing.add(input.samples(1), into: mono, count: frames, gain: 0.70710678)
        }
        let right = output.channelCount > 1 ? output.samples(1) : kernel.pointee.rightScratch
        kernel.pointee.process(frames: frames, left: output.samples(0), right: right)
        if output.channelCount == 1 {
            // Mono out: both sides at the power of one.
            let left = output.samples(0)
            for frame in 0..<frames { left[frame] = (left[frame] + right[frame]) * 0.70710678 }
        }
        return .noError
    }
}
