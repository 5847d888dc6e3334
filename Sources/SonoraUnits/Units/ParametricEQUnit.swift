import SonoraCore
import SonoraDSP
#if canImport(Glibc)
import Glibc
#endif

/// An N-band parametric equalizer ('aufx'/'peqn', Sonora's; band layout after
/// Core Audio's AUNBandEQ): per band a filter type, frequency, gain, Q and
/// bypass, plus a global gain. Parameter IDs are `base + band`.
public final class ParametricEQUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .effect, subType: "peqn", manufacturer: .sonora)

    public enum Parameter {
        public static let globalGain: AudioUnitParameterID = 0
        public static let bypassBand: AudioUnitParameterID = 1000
        public static let filterType: AudioUnitParameterID = 2000
        public static let frequency: AudioUnitParameterID = 3000
        public static let gain: AudioUnitParameterID = 4000
        public static let q: AudioUnitParameterID = 5000
    }

    /// Filter types, numbered as AUNBandEQ's where they match.
    public enum FilterType: Int, CaseIterable, Sendable {
        case peaking = 0, lowPass = 1, highPass = 2, bandPass = 5, notch = 6, lowShelf = 7, highShelf = 8, allPass = 11

        public var name: String {
            switch self {
            case .peaking: "Peaking"
            case .lowPass: "Low Pass"
            case .highPass: "High Pass"
            case .bandPass: "Band Pass"
            case .notch: "Notch"
            case .lowShelf: "Low Shelf"
            case .highShelf: "High Shelf"
            case .allPass: "All Pass"
            }
        }
    }

    public let bandCount: Int
    @exclusivity(unchecked) private var bank: BiquadBank?
    @exclusivity(unchecked) private var slots = (global: 0, bypass: 0, type: 0, frequency: 0, gain: 0, q: 0)
    @exclusivity(unchecked) private var sampleRate = 48000.0

    public init(bands: Int = 8) {
        bandCount = max(1, min(bands, 32))
        var definitions = [
            AudioUnitParameterDefinition(
                Parameter.globalGain,
                AudioUnitParameterInfo(name: "Global Gain", identifier: "globalGain", unit: .decibels, minValue: -96, maxValue: 24, defaultValue: 0)),
        ]
        let typeNames = (0...FilterType.allPass.rawValue).map { FilterType(rawValue: $0)?.name ?? "(unused \($0))" }
        // Grouped by kind, so that each kind's slots are contiguous: slot(kind) + band.
        let bands = (0..<bandCount).map { AudioUnitParameterID($0) }
        definitions += bands.map { id in
            AudioUnitParameterDefinition(
                Parameter.bypassBand + id,
                AudioUnitParameterInfo(name: "Bypass \(id)", identifier: "bypass\(id)", unit: .boolean, minValue: 0, maxValue: 1, defaultValue: 0))
        }
        definitions += bands.map { id in
            AudioUnitParameterDefinition(
                Parameter.filterType + id,
                AudioUnitParameterInfo(
                    name: "Filter Type \(id)", identifier: "type\(id)", unit: .indexed, minValue: 0,
                    maxValue: Float(FilterType.allPass.rawValue), defaultValue: 0, valueStrings: typeNames))
        }
        definitions += bands.map { id in
            let position = Double(id) * 8 / Double(max(bands.count - 1, 1))
            return AudioUnitParameterDefinition(
                Parameter.frequency + id,
                AudioUnitParameterInfo(
                    name: "Frequency \(id)", identifier: "frequency\(id)", unit: .hertz, minValue: 10, maxValue: 22000,
                    defaultValue: Float(min(20000, 62.5 * pow(2, position))), flags: [.readWrite, .displayLogarithmic]))
        }
        definitions += bands.map { id in
            AudioUnitParameterDefinition(
                Parameter.gain + id,
                AudioUnitParameterInfo(name: "Gain \(id)", identifier: "gain\(id)", unit: .decibels, minValue: -24, maxValue: 24, defaultValue: 0))
        }
        definitions += bands.map { id in
            AudioUnitParameterDefinition(
                Parameter.q + id,
                AudioUnitParameterInfo(name: "Q \(id)", identifier: "q\(id)", unit: .generic, minValue: 0.1, maxValue: 40, defaultValue: 0.7071))
        }
        super.init(description: Self.componentDescription, name: "ParametricEQ", inputs: 1, outputs: 1, parameters: definitions)
    }

    public override func validateFormats() throws(AudioError) {
        try super.validateFormats()
        guard try streamFormat(scope: .input, element: 0).channelsPerFrame == streamFormat(scope: .output, element: 0).channelsPerFrame else {
            throw AudioError(.failedInitialization, "ParametricEQ: input and output channel counts differ")
        }
    }

    public override var canProcessInPlace: Bool { true }

    public override func allocateRenderResources() throws(AudioError) {
        func slot(_ id: AudioUnitParameterID) throws(AudioError) -> Int { try parameterSlot(ParameterAddress(id)) }
        slots = (
            try slot(Parameter.globalGain), try slot(Parameter.bypassBand), try slot(Parameter.filterType),
            try slot(Parameter.frequency), try slot(Parameter.gain), try slot(Parameter.q)
        )
        sampleRate = try streamFormat(scope: .output, element: 0).sampleRate
        bank = BiquadBank(bands: bandCount, channels: Int(try streamFormat(scope: .output, element: 0).channelsPerFrame))
    }

    public override func deallocateRenderResources() {
        bank?.deallocate()
        bank = nil
    }

    public override func resetRenderState() { bank?.reset() }

    /// Coefficients for one band's design (also used for the analytic response).
    public static func coefficients(type: Int, frequency: Double, gain: Double, q: Double, sampleRate: Double) -> BiquadCoefficients {
        switch FilterType(rawValue: type) ?? .peaking {
        case .peaking: .peaking(frequency: frequency, q: q, gainDB: gain, sampleRate: sampleRate)
        case .lowPass: .lowPass(frequency: frequency, q: q, sampleRate: sampleRate)
        case .highPass: .highPass(frequency: frequency, q: q, sampleRate: sampleRate)
        case .bandPass: .bandPass(frequency: frequency, q: q, sampleRate: sampleRate)
        case .notch: .notch(frequency: frequency, q: q, sampleRate: sampleRate)
        case .lowShelf: .lowShelf(frequency: frequency, q: q, gainDB: gain, sampleRate: sampleRate)
        case .highShelf: .highShelf(frequency: frequency, q: q, gainDB: gain, sampleRate: sampleRate)
        case .allPass: .allPass(frequency: frequency, q: q, sampleRate: sampleRate)
        }
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        guard let bank else { return .uninitialized }
        let rate = sampleRate
        for band in 0..<bandCount {
            let design = BiquadBank.Design(
                type: Int(context.parameter(slots.type + band)), frequency: context.parameter(slots.frequency + band),
                gain: context.parameter(slots.gain + band), q: context.parameter(slots.q + band),
                bypass: context.parameter(slots.bypass + band) >= 0.5)
            bank.update(band, design, sampleRate: rate) { design in
                Self.coefficients(
                    type: design.type, frequency: Double(design.frequency), gain: Double(design.gain), q: Double(design.q),
                    sampleRate: rate)
            }
        }
        let globalGain = Decibels.toLinear(context.parameter(slots.global))
        for channel in 0..<context.output.channelCount {
            Mixing.copy(context.input(0).samples(channel), to: context.output.samples(channel), count: context.frameCount, gain: globalGain)
        }
        bank.process(context.output, frames: context.frameCount)
        return .noError
    }

    /// The analytic magnitude response in dB at `frequency` for the current settings.
    public func magnitudeDB(atFrequency frequency: Double) throws(AudioError) -> Double {
        let rate = try streamFormat(scope: .output, element: 0).sampleRate
        var total = Double(try parameter(Parameter.globalGain))
        for band in 0..<bandCount {
            let id = AudioUnitParameterID(band)
            guard try parameter(Parameter.bypassBand + id) < 0.5 else { continue }
            total += Self.coefficients(
                type: Int(try parameter(Parameter.filterType + id)), frequency: Double(try parameter(Parameter.frequency + id)),
                gain: Double(try parameter(Parameter.gain + id)), q: Double(try parameter(Parameter.q + id)), sampleRate: rate
            ).magnitudeDB(atFrequency: frequency, sampleRate: rate)
        }
        return total
    }
}
