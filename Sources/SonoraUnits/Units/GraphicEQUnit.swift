import SonoraCore
import SonoraDSP

/// The iPod-EQ-style equalizer ('aufx'/'ipeq'): a ten-band graphic EQ (octave
/// bands from 32 Hz to 16 kHz, peaking filters) whose factory presets, chosen
/// through the PresentPreset property, are the iPod EQ's named curves. Band
/// gains are also parameters 0…9 (dB), so a config can set them directly.
///
/// Core Audio does not publish the iPod EQ's exact curves; these are Sonora's
/// reading of them (documented in the factory preset table below).
public final class GraphicEQUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .effect, subType: "ipeq", manufacturer: .apple)

    /// Centre frequencies of the bands, in Hz.
    public static let bandFrequencies: [Float] = [32, 64, 125, 250, 500, 1000, 2000, 4000, 8000, 16000]
    /// One-octave bands.
    public static let bandQ: Float = 1.41

    /// The factory presets, in Core Audio's order: name and gain per band (dB).
    public static let presetCurves: [(name: String, gains: [Float])] = [
        ("Acoustic", [4.5, 4.5, 3.5, 1, 1.5, 1.5, 3, 3.5, 3, 2]),
        ("Bass Booster", [5, 4, 3, 2, 1, 0, 0, 0, 0, 0]),
        ("Bass Reducer", [-5, -4, -3, -2, -1, 0, 0, 0, 0, 0]),
        ("Classical", [4.5, 3.5, 3, 2.5, -1.5, -1.5, 0, 2, 3, 3.5]),
        ("Dance", [3.5, 6, 5, 0, 2, 3.5, 5, 4.5, 3.5, 0]),
        ("Deep", [5, 3.5, 1.5, 1, 3, 2.5, 1.5, -2, -3.5, -4.5]),
        ("Electronic", [4, 3.5, 1, 0, -2, 2, 1, 1, 4, 5]),
        ("Flat", [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        ("Hip-Hop", [5, 4, 1.5, 3, -1, -1, 1.5, -0.5, 2, 3]),
        ("Jazz", [4, 3, 1.5, 2, -1.5, -1.5, 0, 1.5, 3, 3.5]),
        ("Latin", [4.5, 3, 0, 0, -1.5, -1.5, -1.5, 0, 3, 4.5]),
        ("Loudness", [6, 4, 0, 0, -2, 0, -1, -5, 5, 1]),
        ("Lounge", [-3, -1.5, -0.5, 1.5, 4, 2.5, 0, -1.5, 2, 1]),
        ("Piano", [3, 2, 0, 2.5, 3, 1.5, 3.5, 4.5, 3, 3.5]),
        ("Pop", [-1.5, -1, 0, 2, 4, 4, 2, 0, -1, -1.5]),
        ("R&B", [2.5, 7, 5.5, 1.5, -2.5, -1.5, 2.5, 3, 3, 4]),
        ("Rock", [5, 4, 3, 1.5, -0.5, -1, 0.5, 2.5, 3.5, 4.5]),
        ("Small Speakers", [5.5, 4, 3.5, 2.5, 1, 0, -1.5, -3, -4.5, -5.5]),
        ("Spoken Word", [-3.5, -0.5, 0, 0.5, 3.5, 4.5, 4.5, 4, 2, 0]),
        ("Treble Booster", [0, 0, 0, 0, 0, 1, 2, 3, 4, 5]),
        ("Treble Reducer", [0, 0, 0, 0, 0, -1, -2, -3, -4, -5]),
        ("Vocal Booster", [-1.5, -3, -3, 1.5, 3.5, 3.5, 3, 1.5, 0, -1.5]),
    ]

    @exclusivity(unchecked) private var bank: BiquadBank?
    @exclusivity(unchecked) private var gainSlot = 0
    @exclusivity(unchecked) private var sampleRate = 48000.0

    public init() {
        let bands = Self.bandFrequencies.enumerated().map { index, frequency in
            let label = frequency >= 1000 ? "\(Int(frequency / 1000)) kHz" : "\(Int(frequency)) Hz"
            return AudioUnitParameterDefinition(
                AudioUnitParameterID(index),
                AudioUnitParameterInfo(
                    name: label, identifier: "band\(index)", unit: .decibels, minValue: -12, maxValue: 12,
                    defaultValue: 0, flags: [.readWrite, .canRamp]))
        }
        super.init(description: Self.componentDescription, name: "GraphicEQ", inputs: 1, outputs: 1, parameters: bands)
        presentPresetValue = factoryPresets[7]  // Flat
    }

    public override var factoryPresets: [AudioUnitPreset] {
        Self.presetCurves.enumerated().map { AudioUnitPreset(number: $0.offset, name: $0.element.name) }
    }

    public override func applyFactoryPreset(_ preset: AudioUnitPreset) throws(AudioError) {
        let curve = Self.presetCurves[preset.number].gains
        for (band, gain) in curve.enumerated() { try setParameter(AudioUnitParameterID(band), to: gain) }
    }

    public override func validateFormats() throws(AudioError) {
        try super.validateFormats()
        guard try streamFormat(scope: .input, element: 0).channelsPerFrame == streamFormat(scope: .output, element: 0).channelsPerFrame else {
            throw AudioError(.failedInitialization, "GraphicEQ: input and output channel counts differ")
        }
    }

    public override var canProcessInPlace: Bool { true }

    public override func allocateRenderResources() throws(AudioError) {
        gainSlot = try parameterSlot(ParameterAddress(0))
        sampleRate = try streamFormat(scope: .output, element: 0).sampleRate
        bank = BiquadBank(bands: Self.bandFrequencies.count, channels: Int(try streamFormat(scope: .output, element: 0).channelsPerFrame))
    }

    public override func deallocateRenderResources() {
        bank?.deallocate()
        bank = nil
    }

    public override func resetRenderState() { bank?.reset() }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        guard let bank else { return .uninitialized }
        let rate = sampleRate
        for band in 0..<bank.bands {
            let gain = context.parameter(gainSlot + band)
            let design = BiquadBank.Design(
                type: 0, frequency: Self.bandFrequencies[band], gain: gain, q: Self.bandQ, bypass: gain == 0)
            bank.update(band, design, sampleRate: rate) { design in
                .peaking(frequency: Double(design.frequency), q: Double(design.q), gainDB: Double(design.gain), sampleRate: rate)
            }
        }
        context.output.copy(from: context.input(0))
        bank.process(context.output, frames: context.frameCount)
        return .noError
    }

    /// The EQ's analytic magnitude response in dB at `frequency` for the current band gains.
    public func magnitudeDB(atFrequency frequency: Double) throws(AudioError) -> Double {
        let rate = try streamFormat(scope: .output, element: 0).sampleRate
        var total = 0.0
        for (band, centre) in Self.bandFrequencies.enumerated() {
            let gain = Double(try parameter(AudioUnitParameterID(band)))
            guard gain != 0 else { continue }
            total += BiquadCoefficients.peaking(frequency: Double(centre), q: Double(Self.bandQ), gainDB: gain, sampleRate: rate)
                .magnitudeDB(atFrequency: frequency, sampleRate: rate)
        }
        return total
    }
}
