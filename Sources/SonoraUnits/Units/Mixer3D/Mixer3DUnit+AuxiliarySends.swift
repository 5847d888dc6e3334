import SonoraCore
import SonoraDSP

/// Auxiliary sends (EFX's effect-slot sends, Sonora's extension of the 3D mixer): up to
/// `maximumAuxiliaryBuses` mono buses, set by the global `auxiliaryBusCount` property before
/// initialize. Each input adds its signal (after playback rate and occlusion, channels summed
/// at equal power) into each bus at its own level and through its own pair of shelves; the
/// direct sound has a pair of shelves too. The shelves are EFX's filters as OpenAL Soft
/// builds them: a high shelf at 5 kHz and a low shelf at 250 Hz, slope 1, whose gain at the
/// reference frequency is the parameter (the shelf itself reaching twice that in dB).
///
/// The buses are read after each render (`auxiliaryBus(_:)`), by whoever runs the effects.
extension Mixer3DUnit {
    public static let maximumAuxiliaryBuses = 4
    /// The shelves' reference frequencies (OpenAL Soft's LOWPASSFREQREF and HIGHPASSFREQREF).
    public static let highShelfReference = 5_000.0
    public static let lowShelfReference = 250.0

    static let auxiliaryDefinitions: [AudioUnitParameterDefinition] = {
        func info(_ name: String, _ identifier: String, _ range: ClosedRange<Float>, _ value: Float) -> AudioUnitParameterInfo {
            AudioUnitParameterInfo(
                name: name, identifier: identifier, unit: .decibels, minValue: range.lowerBound, maxValue: range.upperBound,
                defaultValue: value, flags: [.readWrite, .canRamp])
        }
        typealias P = Parameter
        var definitions = [
            AudioUnitParameterDefinition(
                P.directHighFrequencyGain, scope: .input, info("Direct HF Gain", "directGainHF", -60...0, 0)),
            AudioUnitParameterDefinition(
                P.directLowFrequencyGain, scope: .input, info("Direct LF Gain", "directGainLF", -60...0, 0)),
        ]
        for bus in 0..<maximumAuxiliaryBuses {
            definitions.append(AudioUnitParameterDefinition(
                P.auxiliarySendLevel(bus), scope: .input, info("Send \(bus) Level", "send\(bus)Level", -120...20, -120)))
            definitions.append(AudioUnitParameterDefinition(
                P.auxiliarySendHighFrequencyGain(bus), scope: .input, info("Send \(bus) HF Gain", "send\(bus)GainHF", -60...0, 0)))
            definitions.append(AudioUnitParameterDefinition(
                P.auxiliarySendLowFrequencyGain(bus), scope: .input, info("Send \(bus) LF Gain", "send\(bus)GainLF", -60...0, 0)))
        }
        return definitions
    }()

    /// The samples of auxiliary bus `bus` from the last render (as many frames as it rendered);
    /// nil when the bus does not exist or the unit is not initialized. For the render thread,
    /// right after the unit's render: plain reads, nothing allocated.
    public func auxiliaryBus(_ bus: Int) -> UnsafePointer<Float>? {
        guard let renderer, bus >= 0, bus < renderer.pointee.auxiliaryBusCount else { return nil }
        return UnsafePointer(renderer.pointee.auxiliaryBuses + bus * renderer.pointee.maximumFrames)
    }

    /// A shelf as OpenAL Soft builds EFX's filters: `decibels` at `reference`, slope 1 (Q = 1/√2).
    static func efxShelf(high: Bool, decibels: Float, sampleRate: Double) -> BiquadCoefficients {
        guard decibels < 0 else { return .identity }
        let reference = min(high ? highShelfReference : lowShelfReference, 0.45 * sampleRate)
        let shelf = 2 * Double(decibels)
        return high
            ? .highShelf(frequency: reference, q: 0.5.squareRoot(), gainDB: shelf, sampleRate: sampleRate)
            : .lowShelf(frequency: reference, q: 0.5.squareRoot(), gainDB: shelf, sampleRate: sampleRate)
    }
}

extension Mixer3DUnit.Parameter {
    /// dB −60…0 at 5 kHz: the direct sound's high shelf (EFX low-pass GAINHF).
    public static let directHighFrequencyGain: AudioUnitParameterID = 100
    /// dB −60…0 at 250 Hz: the direct sound's low shelf (EFX high-pass GAINLF).
    public static let directLowFrequencyGain: AudioUnitParameterID = 101
    /// dB −120…20 (−120: nothing sent): the input's level into auxiliary bus `bus`. Not tied to
    /// the input's gain or distance: the caller gives the level the send should have.
    public static func auxiliarySendLevel(_ bus: Int) -> AudioUnitParameterID { 110 + AudioUnitParameterID(bus) }
    /// dB −60…0 at 5 kHz: the send's high shelf.
    public static func auxiliarySendHighFrequencyGain(_ bus: Int) -> AudioUnitParameterID { 120 + AudioUnitParameterID(bus) }
    /// dB −60…0 at 250 Hz: the send's low shelf.
    public static func auxiliarySendLowFrequencyGain(_ bus: Int) -> AudioUnitParameterID { 130 + AudioUnitParameterID(bus) }
}

extension AudioUnitPropertyID {
    /// A 3D mixer's number of auxiliary send buses (global, 0…4, `.elementCount`); set before initialize.
    public static let auxiliaryBusCount = AudioUnitPropertyID(rawValue: 64_301)
}
