import SonoraCore

/// The audio units Sonora can create, found by component description or name
/// (`AudioComponentFindNext` + `AudioComponentInstanceNew`).
public final class AudioComponentRegistry: @unchecked Sendable {
    public struct Component: Sendable {
        public var description: AudioComponentDescription
        public var name: String
        public var summary: String
        let make: @Sendable () -> AudioUnit

        public init(description: AudioComponentDescription, name: String, summary: String, make: @escaping @Sendable () -> AudioUnit) {
            self.description = description
            self.name = name
            self.summary = summary
            self.make = make
        }
    }

    public static let shared = AudioComponentRegistry()

    private let registered = ControlLock<[Component]>([])

    /// Every registered component, in registration order.
    public var components: [Component] { registered.withLock { $0 } }

    init() {
        register(IOUnit.componentDescription, "RemoteIO", "I/O unit: plays element 0 and captures element 1 on an audio device", IOUnit.init)
        register(FilePlayerUnit.componentDescription, "FilePlayer", "plays an audio file (held in memory), looping or once", FilePlayerUnit.init)
        register(FileRecorderUnit.componentDescription, "FileRecorder", "passes audio through and records it to a file off the realtime thread", FileRecorderUnit.init)
        register(GenericOutputUnit.componentDescription, "GenericOutput", "offline output: renders as fast as asked", GenericOutputUnit.init)
        register(MultiChannelMixerUnit.componentDescription, "MultiChannelMixer", "mixes any number of inputs, volume/pan/enable, metering") { MultiChannelMixerUnit() }
        register(Mixer3DUnit.componentDescription, "3DMixer", "places mono/stereo inputs by azimuth, elevation, distance: panning, spherical head, HRTF, 4.0/5.1") { Mixer3DUnit() }
        register(SplitterUnit.componentDescription, "Splitter", "one input to several outputs") { SplitterUnit() }
        register(MergerUnit.componentDescription, "Merger", "several inputs' channels into one output") { MergerUnit() }
        register(SampleDelayUnit.componentDescription, "SampleDelay", "delays by a whole number of frames", SampleDelayUnit.init)
        register(GainUnit.componentDescription, "Gain", "gain in dB and mute, rampable", GainUnit.init)
        register(ToneGeneratorUnit.componentDescription, "ToneGenerator", "sine, sweep, white/pink noise, impulses", ToneGeneratorUnit.init)
        register(ConverterUnit.componentDescription, "Converter", "sample rate (libsoxr) and channel count / map", ConverterUnit.init)
        register(MeterUnit.componentDescription, "Meter", "passes audio through, meters RMS and peak per channel") { MeterUnit() }
        register(GraphicEQUnit.componentDescription, "GraphicEQ", "ten-band graphic EQ with the iPod EQ presets", GraphicEQUnit.init)
        register(ReverbUnit.componentDescription, "Reverb", "a room reverb with EFX's reverb parameters (wet only), for effect sends") { ReverbUnit() }
        register(ParametricEQUnit.componentDescription, "ParametricEQ", "N-band parametric EQ: type, frequency, gain, Q, bypass per band") { ParametricEQUnit() }
        // The voice-processing I/O unit and the others of modules above this one, when linked.
        for component in Self.linkedProviderComponents() { register(component) }
    }

    /// Adds a component (plugins, tests). A later registration of the same description replaces the earlier.
    public func register(
        _ description: AudioComponentDescription, _ name: String, _ summary: String,
        _ make: @escaping @Sendable () -> AudioUnit
    ) {
        registered.withLock { components in
            components.removeAll { $0.description == description }
            components.append(Component(description: description, name: name, summary: summary, make: make))
        }
    }

    /// Adds a component described whole (a provider's).
    public func register(_ component: Component) {
        register(component.description, component.name, component.summary, component.make)
    }

    /// A new instance of the component, or `-66751` (unsupported type) naming what was asked.
    public func instantiate(_ description: AudioComponentDescription) throws(AudioError) -> AudioUnit {
        guard let component = components.first(where: { $0.description == description }) else {
            throw AudioError(.componentUnsupportedType, "no audio unit \(description)")
        }
        return component.make()
    }

    /// A new instance by name (`Gain`, case-insensitive) or by `type/subtype/manufacturer`.
    public func instantiate(named text: String) throws(AudioError) -> AudioUnit {
        if let component = components.first(where: { $0.name.lowercased() == text.lowercased() || $0.description.description == text }) {
            return component.make()
        }
        let names = components.map(\.name).joined(separator: ", ")
        throw AudioError(.componentUnsupportedType, "no audio unit named '\(text)'; available: \(names)")
    }
}
