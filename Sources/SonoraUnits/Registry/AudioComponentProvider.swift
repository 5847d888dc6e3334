/// A module above SonoraUnits that offers audio units conforms one type to this, so the
/// shared registry finds its units as soon as the module is linked into the program —
/// as Core Audio finds every built-in component without the program registering it.
/// Swift has no load-time initializers; the registry looks the provider up by its type
/// name in the Swift runtime's metadata instead (`knownProviders`).
public protocol AudioComponentProvider {
    /// The provider's components, each with the closure that creates an instance.
    static var components: [AudioComponentRegistry.Component] { get }
}

extension AudioComponentRegistry {
    /// Providers in Sonora's own modules above this one, by type name. A program that
    /// does not link the module simply does not have its units (the lookup finds nothing).
    static let knownProviders = ["11SonoraVoice15VoiceComponentsO"]  // SonoraVoice.VoiceComponents, mangled

    /// The components of every known provider linked into this program.
    static func linkedProviderComponents() -> [Component] {
        knownProviders.flatMap { name -> [Component] in
            guard let provider = _typeByName(name) as? any AudioComponentProvider.Type else { return [] }
            return provider.components
        }
    }
}
