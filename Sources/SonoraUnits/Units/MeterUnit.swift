import SonoraCore
import SonoraDSP

/// Passes audio through and meters it ('aufx'/'metr', Sonora's): average (RMS)
/// and peak power in dB per channel, read as parameters 0… (average) and
/// 100… (peak), channel added, like Core Audio's mixer meters.
public final class MeterUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .effect, subType: "metr", manufacturer: .sonora)

    public enum Parameter {
        public static let averagePower: AudioUnitParameterID = 0
        public static let peakPower: AudioUnitParameterID = 100
    }

    /// Channels metered: one average and one peak meter each, for as many channels as the
    /// unit is made for (a 2-channel pipeline's meter shows 2, not a fixed 8).
    public let meteredChannels: Int
    public static let maximumChannels = 100

    @exclusivity(unchecked) private var meters: UnsafeMutablePointer<LevelMeter>?
    @exclusivity(unchecked) private var averageSlot = 0
    @exclusivity(unchecked) private var peakSlot = 0

    /// A meter for `channels` channels (1…100; the parameter IDs of peak meters start at 100).
    public init(channels: Int = 2) {
        meteredChannels = max(1, min(channels, Self.maximumChannels))
        let channels = (0..<meteredChannels).map { AudioUnitParameterID($0) }
        func meter(_ id: AudioUnitParameterID, _ name: String, _ identifier: String) -> AudioUnitParameterDefinition {
            AudioUnitParameterDefinition(
                id,
                AudioUnitParameterInfo(
                    name: name, identifier: identifier, unit: .decibels, minValue: -120, maxValue: 20, defaultValue: -120,
                    flags: [.isReadable, .meterReadOnly]))
        }
        super.init(
            description: Self.componentDescription, name: "Meter", inputs: 1, outputs: 1,
            parameters: channels.map { meter(Parameter.averagePower + $0, "Average Power \($0)", "average\($0)") }
                + channels.map { meter(Parameter.peakPower + $0, "Peak Power \($0)", "peak\($0)") })
    }

    public override var canProcessInPlace: Bool { true }

    /// The average meters are published as mean squares (no square root on the render thread).
    public override func publishesMeanSquare(_ id: AudioUnitParameterID) -> Bool {
        (Parameter.averagePower..<Parameter.peakPower).contains(id)
    }

    public override func allocateRenderResources() throws(AudioError) {
        averageSlot = try parameterSlot(ParameterAddress(Parameter.averagePower))
        peakSlot = try parameterSlot(ParameterAddress(Parameter.peakPower))
        let rate = try streamFormat(scope: .output, element: 0).sampleRate
        meters = .allocate(capacity: meteredChannels)
        meters!.initialize(repeating: LevelMeter(sampleRate: rate), count: meteredChannels)
    }

    public override func deallocateRenderResources() {
        meters?.deallocate()
        meters = nil
    }

    public override func resetRenderState() {
        guard let meters else { return }
        for channel in 0..<meteredChannels { meters[channel].reset() }
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        guard let meters else { return .uninitialized }
        context.output.copy(from: context.input(0))
        for channel in 0..<min(context.output.channelCount, meteredChannels) {
            meters[channel].measure(context.output.samples(channel), count: context.frameCount)
            context.publish(Float(meters[channel].meanSquare), slot: averageSlot + channel)
            context.publish(Float(meters[channel].peak), slot: peakSlot + channel)
        }
        return .noError
    }
}
