extension PipelineWriter {
    /// The `transport:` section as the parser reads it back (nothing when there is none).
    static func transportLines(_ transport: PipelineConfiguration.TransportSettings?) -> [String] {
        guard let transport else { return [] }
        return [
            "transport:", "  tempo: \(transport.tempo)", "  meter: \(quote(transport.timeSignature.description))",
            "  playing: \(transport.isPlaying)",
        ]
    }
}
