import SonoraUnits

extension NodeKind {
    /// The programs attached to the appliance (its session server): their playback summed,
    /// at the gains the session policy sets; its input, if connected, is what their
    /// capture streams record. With `role`, only the programs whose session has that role
    /// (so the intercom's streams can go through the canceller and the media's through
    /// the EQ); without, the programs of every role no other `clients` node names.
    public static let clients = NodeKind(
        name: "clients",
        summary: "the audio of programs attached to the appliance (`sonora:` devices): their playback mixed at the session policy's gains; its input feeds their recordings (needs a `session` section); `role:` takes one role's programs only",
        options: [
            NodeOption("role", .name, "a session role: this node takes only the streams of programs in that role; a `clients` node without `role` takes those of every role no other one names (and of programs with none)"),
        ]
    ) { build in
        guard let session = build.configuration.session else {
            build.error("a `clients` node needs a `session` section: the session server is what programs attach to")
            return ClientStreamsUnit(table: nil)
        }
        let others = build.configuration.nodes.filter { $0.nodeKind?.name == "clients" && $0.id != build.spec.id }
        let otherRoles = others.compactMap { $0.options["role"]?.value.text }
        func bit(_ role: String?) -> UInt64 { 1 << UInt64(ApplianceSessionServer.routingGroup(of: role, in: session.roles)) }
        var groups = UInt64.max
        // A role written wrongly is reported by the parser already; nothing more to say here.
        if build.spec.invalidOptions.contains("role") { return ClientStreamsUnit(table: nil, groups: 0) }
        if let role = build.option("role")?.value.text {
            if !session.roles.contains(where: { $0.name == role }) {
                build.error(at: "role", "no role '\(Diagnostic.excerpt(role))' in the session section (roles: \(session.roles.map(\.name).joined(separator: ", ")))")
            } else if otherRoles.contains(role) {
                build.error(at: "role", "another `clients` node already takes role '\(role)'")
            }
            groups = bit(role)
        } else {
            if others.contains(where: { $0.options["role"] == nil && !$0.invalidOptions.contains("role") }) {
                build.error("only one `clients` node may go without `role` (it takes every role no other names)")
            }
            for role in otherRoles { groups &= ~bit(role) }
        }
        return ClientStreamsUnit(table: build.isLive ? ServedClientStreams.table : nil, groups: groups)
    }
}
