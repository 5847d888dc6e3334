import SonoraUnits

extension NodeKind {
    /// A file player (FilePlayer): the file is decoded and converted to the engine format when built.
    public static let player = NodeKind(
        name: "player", aliases: ["FilePlayer"],
        summary: "plays an audio file (held in memory, converted to the engine format), looping or once",
        options: [
            NodeOption("file", .inputFile, required: true, "the file to play (any type `sonora info` reads)"),
            NodeOption("loop", .boolean, "`true` to loop"),
        ]
    ) { build in
        let player = FilePlayerUnit()
        try? player.setStreamFormat(build.format, scope: .output, element: 0)
        player.loops = build.option("loop")?.value.boolean ?? false
        if let path = build.path("file") {
            do { try player.setFile(path) } catch { build.error(at: "file", error) }
        }
        return player
    }
}
