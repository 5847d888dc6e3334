import SonoraUnits

/// SonoraVoice's units: the voice processor effect and the voice-processing I/O unit.
/// The shared registry finds this provider by name when SonoraVoice is linked, so a
/// program asks for `auou/vpio/appl` as it would in Core Audio, without registering.
public enum VoiceComponents: AudioComponentProvider {
    public static var components: [AudioComponentRegistry.Component] {
        [
            .init(
                description: VoiceProcessorUnit.componentDescription, name: "VoiceProcessor",
                summary: "echo cancellation and suppression: microphone on input 0, loudspeaker reference on input 1"
            ) { VoiceProcessorUnit() },
            .init(
                description: VoiceProcessingIOUnit.voiceProcessingDescription, name: "VoiceProcessingIO",
                summary: "I/O unit with echo cancellation: plays element 0, captures element 1 cancelled against what it played"
            ) { VoiceProcessingIOUnit() },
        ]
    }
}

extension AudioComponentRegistry {
    /// Adds SonoraVoice's units again. The registry already has them when SonoraVoice is
    /// linked; kept for programs written against the earlier explicit registration.
    public func registerVoiceUnits() {
        for component in VoiceComponents.components { register(component) }
    }
}
