import SonoraCore
import SonoraUnits

/// Parameters shared by the voice-processing units (global scope, element 0). The
/// settings may change while rendering; the metrics are read-only (meter) parameters the
/// render publishes every slice. Core Audio's VPIO exposes the first three as
/// properties (BypassVoiceProcessing 2100, VoiceProcessingEnableAGC 2101, MuteOutput
/// 2104): they are reachable under those property IDs too.
public enum VoiceProcessingParameter {
    public static let bypass: AudioUnitParameterID = 0
    public static let automaticGainControl: AudioUnitParameterID = 1
    public static let muteOutput: AudioUnitParameterID = 2
    public static let suppressionStrength: AudioUnitParameterID = 3
    public static let noiseSuppression: AudioUnitParameterID = 4
    public static let comfortNoise: AudioUnitParameterID = 5
    /// Bulk delay found between reference and microphone, seconds (−1: not yet).
    public static let estimatedDelay: AudioUnitParameterID = 1000
    /// Echo return loss enhancement over recent far-end-only speech, dB.
    public static let erle: AudioUnitParameterID = 1001
    /// 1 while both talkers are active.
    public static let doubleTalk: AudioUnitParameterID = 1002
    /// Reference clock drift against the microphone's, ppm.
    public static let driftPPM: AudioUnitParameterID = 1003
    /// Times the echo path was found changed since initialize (the canceller re-learned it).
    public static let echoPathChanges: AudioUnitParameterID = 1004
    /// The bulk delay in milliseconds (−1: not yet) — the meter a pipeline's `voice` node
    /// reports as `delay_ms`.
    public static let estimatedDelayMilliseconds: AudioUnitParameterID = 1005

    static func definitions(defaults: EchoCancellerConfiguration) -> [AudioUnitParameterDefinition] {
        func flag(_ id: AudioUnitParameterID, _ name: String, _ identifier: String, _ value: Bool) -> AudioUnitParameterDefinition {
            AudioUnitParameterDefinition(id, AudioUnitParameterInfo(name: name, identifier: identifier, unit: .boolean, minValue: 0, maxValue: 1, defaultValue: value ? 1 : 0))
        }
        func meter(_ id: AudioUnitParameterID, _ name: String, _ identifier: String, _ unit: AudioUnitParameterUnit, _ range: ClosedRange<Float>, _ initial: Float? = nil) -> AudioUnitParameterDefinition {
            AudioUnitParameterDefinition(id, AudioUnitParameterInfo(
                name: name, identifier: identifier, unit: unit, minValue: range.lowerBound, maxValue: range.upperBound,
                defaultValue: initial ?? range.lowerBound, flags: [.isReadable, .meterReadOnly]))
        }
        return [
            flag(bypass, "Bypass Voice Processing", "bypassVoiceProcessing", false),
            flag(automaticGainControl, "Automatic Gain Control", "agc", defaults.automaticGainControl),
            flag(muteOutput, "Mute Output", "muteOutput", false),
            AudioUnitParameterDefinition(suppressionStrength, AudioUnitParameterInfo(
                name: "Suppression Strength", identifier: "suppressionStrength", unit: .generic, minValue: 0, maxValue: 1,
                defaultValue: defaults.suppressionStrength)),
            flag(noiseSuppression, "Noise Suppression", "noiseSuppression", defaults.noiseSuppression),
            flag(comfortNoise, "Comfort Noise", "comfortNoise", defaults.comfortNoise),
            meter(estimatedDelay, "Estimated Delay", "estimatedDelay", .seconds, -1...2),
            meter(erle, "ERLE (dB)", "erle_db", .generic, 0...100),
            meter(doubleTalk, "Double Talk", "double_talk", .boolean, 0...1),
            meter(driftPPM, "Drift", "drift_ppm", .generic, -20000...20000, 0),
            meter(echoPathChanges, "Echo Path Changes", "echo_path_changes", .indexed, 0...1_000_000),
            meter(estimatedDelayMilliseconds, "Estimated Delay (ms)", "delay_ms", .milliseconds, -1...2000),
        ]
    }
}

extension AudioUnitPropertyID {
    /// Core Audio's kAUVoiceIOProperty_BypassVoiceProcessing (flag).
    public static let bypassVoiceProcessing = AudioUnitPropertyID(rawValue: 2100)
    /// Core Audio's kAUVoiceIOProperty_VoiceProcessingEnableAGC (flag).
    public static let voiceProcessingEnableAGC = AudioUnitPropertyID(rawValue: 2101)
    /// Core Audio's kAUVoiceIOProperty_MuteOutput (flag).
    public static let muteOutput = AudioUnitPropertyID(rawValue: 2104)

    /// The parameter a voice-processing property mirrors.
    var voiceParameter: AudioUnitParameterID? {
        switch self {
        case .bypassVoiceProcessing: VoiceProcessingParameter.bypass
        case .voiceProcessingEnableAGC: VoiceProcessingParameter.automaticGainControl
        case .muteOutput: VoiceProcessingParameter.muteOutput
        default: nil
        }
    }
}

/// The render-side state both units share: the canceller, the parameter slots, and the
/// per-slice application of settings and publication of metrics.
final class VoiceProcessingState {
    let canceller: EchoCanceller
    var bypassSlot = 0, agcSlot = 0, muteSlot = 0, strengthSlot = 0, noiseSlot = 0, comfortSlot = 0
    var delaySlot = 0, erleSlot = 0, doubleTalkSlot = 0, driftSlot = 0, pathChangeSlot = 0, delayMillisecondsSlot = 0

    init(canceller: EchoCanceller, unit: AudioUnit) throws(AudioError) {
        self.canceller = canceller
        bypassSlot = try unit.parameterSlot(ParameterAddress(VoiceProcessingParameter.bypass))
        agcSlot = try unit.parameterSlot(ParameterAddress(VoiceProcessingParameter.automaticGainControl))
        muteSlot = try unit.parameterSlot(ParameterAddress(VoiceProcessingParameter.muteOutput))
        strengthSlot = try unit.parameterSlot(ParameterAddress(VoiceProcessingParameter.suppressionStrength))
        noiseSlot = try unit.parameterSlot(ParameterAddress(VoiceProcessingParameter.noiseSuppression))
        comfortSlot = try unit.parameterSlot(ParameterAddress(VoiceProcessingParameter.comfortNoise))
        delaySlot = try unit.parameterSlot(ParameterAddress(VoiceProcessingParameter.estimatedDelay))
        erleSlot = try unit.parameterSlot(ParameterAddress(VoiceProcessingParameter.erle))
        doubleTalkSlot = try unit.parameterSlot(ParameterAddress(VoiceProcessingParameter.doubleTalk))
        driftSlot = try unit.parameterSlot(ParameterAddress(VoiceProcessingParameter.driftPPM))
        pathChangeSlot = try unit.parameterSlot(ParameterAddress(VoiceProcessingParameter.echoPathChanges))
        delayMillisecondsSlot = try unit.parameterSlot(ParameterAddress(VoiceProcessingParameter.estimatedDelayMilliseconds))
    }

    /// Reads the settings for this slice into the canceller; returns whether output is muted.
    func applySettings(_ context: RenderContext) -> Bool {
        canceller.isBypassed = context.parameter(bypassSlot) >= 0.5
        canceller.automaticGainControl = context.parameter(agcSlot) >= 0.5
        canceller.suppressionStrength = context.parameter(strengthSlot)
        canceller.noiseSuppression = context.parameter(noiseSlot) >= 0.5
        canceller.comfortNoise = context.parameter(comfortSlot) >= 0.5
        return context.parameter(muteSlot) >= 0.5
    }

    func publishMetrics(_ context: RenderContext) {
        let metrics = canceller.metrics
        context.publish(Float(metrics.estimatedDelay ?? -1), slot: delaySlot)
        context.publish(metrics.estimatedDelay.map { Float($0 * 1000) } ?? -1, slot: delayMillisecondsSlot)
        context.publish(Float(metrics.erle), slot: erleSlot)
        context.publish(metrics.isDoubleTalk ? 1 : 0, slot: doubleTalkSlot)
        context.publish(Float(metrics.driftPPM), slot: driftSlot)
        context.publish(Float(metrics.echoPathChanges), slot: pathChangeSlot)
    }
}
