@testable import SonoraUnits
import SonoraVoice
import Testing

/// Core Audio finds the voice-processing I/O unit with AudioComponentFindNext alone; so does
/// Sonora's registry once SonoraVoice is linked, without anyone calling `registerVoiceUnits()`.
@Suite struct VoiceComponentLookupTests {
    @Test func aFreshRegistryFindsTheVoiceProcessingIOUnitWithoutRegistration() throws {
        // A new registry: nothing in this process can have registered into it.
        let registry = AudioComponentRegistry()
        let unit = try registry.instantiate(VoiceProcessingIOUnit.voiceProcessingDescription)
        #expect(unit is VoiceProcessingIOUnit)
        #expect(try registry.instantiate(named: "VoiceProcessor") is VoiceProcessorUnit)
        #expect(registry.components.contains { $0.name == "VoiceProcessingIO" })
    }

    @Test func theProviderIsFoundByTheNameTheRegistryLooksFor() {
        #expect(AudioComponentRegistry.knownProviders.contains { _typeByName($0) == VoiceComponents.self })
    }
}
