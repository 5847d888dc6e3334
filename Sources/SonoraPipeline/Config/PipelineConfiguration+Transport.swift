import SonoraUnits

extension PipelineConfiguration {
    /// The `transport:` section: the graph transport's state at start (tempo, meter, playing).
    /// Without it the transport starts stopped at 120 BPM in 4/4; it is there either way, for
    /// `sonora ctl transport` and for LV2 plugins that follow time:Position.
    public struct TransportSettings: Sendable {
        public static let tempoRange = 1.0...999.0

        public var tempo = 120.0
        public var timeSignature = TimeSignature.common
        public var isPlaying = false
        public var location: SourceLocation?

        public init() {}
    }
}
