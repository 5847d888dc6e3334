import SonoraUnits

extension NodeKind {
    /// The programs attached to the appliance (its session server): their playback summed,
    /// at the gains the session policy sets; its input, if connected, is what their
    /// capture streams record.
    public static let clients = NodeKind(
        name: "clients",
        summary: "the audio of programs attached to the appliance (`sonora:` devices): their playback mixed at the session policy's gains; its input feeds their recordings (needs a `session` section)"
    ) { build in
        if build.configuration.session == nil {
            build.error("a `clients` node needs a `session` section: the session server is what programs attach to")
        }
        return ClientStreamsUnit(table: build.isLive ? ServedClientStreams.table : nil)
    }
}
