import SonoraUnits

extension AudioComponentRegistry {
    /// Adds SonoraVoice's units: the voice processor effect and the voice-processing I/O
    /// unit. Swift has no load-time registration, so a program (the pipeline's node kinds,
    /// the CLI) calls this once for each module whose units it offers; calling it again
    /// changes nothing.
    public func registerVoiceUnits() {
        register(
            VoiceProcessorUnit.componentDescription, "VoiceProcessor",
            "echo cancellation and suppression: microphone on input 0, loudspeaker reference on input 1") { VoiceProcessorUnit() }
        register(
            VoiceProcessingIOUnit.voiceProcessingDescription, "VoiceProcessingIO",
            "I/O unit with echo cancellation: plays element 0, captures element 1 cancelled against what it played") { VoiceProcessingIOUnit() }
    }
}
