extension PipelineWriter {
    /// The `session:` section as the parser reads it back (nothing when there is none).
    static func sessionLines(_ session: PipelineConfiguration.Session?) -> [String] {
        guard let session else { return [] }
        var lines = ["session:"]
        if let socket = session.socketPath { lines.append("  socket: \(quote(socket))") }
        if let group = session.group { lines.append("  group: \(quote(group))") }
        lines += ["  max_clients: \(session.maxClients)", "  fade_ms: \(session.fadeMilliseconds)"]
        if !session.roles.isEmpty {
            lines.append("  roles:")
            for role in session.roles {
                var fields = ["name: \(quote(role.name))", "priority: \(role.priority)"]
                if !role.interrupts.isEmpty { fields.append("interrupts: [\(role.interrupts.map(quote).joined(separator: ", "))]") }
                if !role.ducks.isEmpty { fields.append("ducks: [\(role.ducks.map(quote).joined(separator: ", "))]") }
                fields += ["duck_db: \(role.duckDB)", "attack_ms: \(role.attackMilliseconds)", "release_ms: \(role.releaseMilliseconds)", "may_record: \(role.mayRecord)"]
                lines.append("    - {\(fields.joined(separator: ", "))}")
            }
        }
        if !session.categoryRoles.isEmpty {
            lines.append("  categories:")
            for category in SessionCategory.allCases {
                if let role = session.categoryRoles[category] { lines.append("    \(category.rawValue): \(quote(role))") }
            }
        }
        return lines
    }
}
