import SonoraUnits

extension NodeKind {
    /// A meter with one average and one peak meter per engine channel.
    public static let meter = NodeKind(
        name: "Meter",
        summary: "passes audio through and meters RMS and peak per channel (the engine's channels)"
    ) { build in
        MeterUnit(channels: Int(build.format.channelsPerFrame))
    }
}
