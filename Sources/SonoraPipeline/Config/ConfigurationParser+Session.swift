import Foundation
import Yams

extension ConfigurationParser {
    static let sessionKeys = ["socket", "group", "max_clients", "fade_ms", "roles", "categories"]
    static let roleKeys = ["name", "priority", "interrupts", "ducks", "duck_db", "attack_ms", "release_ms", "may_record"]
}

extension ConfigurationParser.Walker {
    /// `session:` — every key typed and ranged here; what a role names is checked once all
    /// roles are read. The socket path and the group are the machine's, checked with the run
    /// checks (`sonora check`, `sonora run`).
    mutating func session(_ node: Node) -> PipelineConfiguration.Session {
        var session = PipelineConfiguration.Session()
        session.location = location(node)
        var roleNodes: [(role: SessionRole, node: Node)] = []
        var categoryNodes: [(category: SessionCategory, role: String, node: Node)] = []
        for (key, _, value) in pairs(node, what: "session", allowed: ConfigurationParser.sessionKeys) {
            switch key {
            case "socket":
                session.socketLocation = location(value)
                if let path = string(value, "session.socket") {
                    if path.isEmpty { error(value, "session.socket is empty; give a path (or leave it out for the default)") } else { session.socketPath = path }
                }
            case "group":
                session.groupLocation = location(value)
                if let group = string(value, "session.group") {
                    if group.isEmpty { error(value, "session.group is empty; give a group name (or leave it out: only this user may attach)") } else { session.group = group }
                }
            case "max_clients":
                session.maxClients = integer(value, "session.max_clients", in: PipelineConfiguration.Session.maxClientsRange) ?? session.maxClients
            case "fade_ms":
                session.fadeMilliseconds = integer(value, "session.fade_ms", in: SessionPolicy.fadeRange) ?? session.fadeMilliseconds
            case "roles":
                roleNodes = roles(value)
            case "categories":
                categoryNodes = categories(value)
            default: break
            }
        }
        session.roles = roleNodes.map(\.role)
        let names = session.roles.map(\.name)
        for (role, item) in roleNodes { checkReferences(of: role, at: item, among: session.roles) }
        for (category, role, value) in categoryNodes {
            if names.contains(role) { session.categoryRoles[category] = role }
            else { error(value, "session.categories.\(category.rawValue): no role '\(Diagnostic.excerpt(role))'\(suggestion(for: role, in: names))\(Self.known(names))") }
        }
        return session
    }

    static func known(_ names: [String]) -> String { names.isEmpty ? " (session.roles defines none)" : " (roles: \(names.joined(separator: ", ")))" }

    /// `roles:` — a list of role mappings; a duplicate name is reported at the second, naming the first.
    mutating func roles(_ node: Node) -> [(role: SessionRole, node: Node)] {
        guard let sequence = node.sequence else {
            error(node, "session.roles must be a list of roles such as {name: media, priority: 10}")
            return []
        }
        var result: [(SessionRole, Node)] = []
        var seen: [String: SourceLocation] = [:]
        for item in sequence {
            guard let role = role(item) else { continue }
            if let first = seen[role.name] {
                error(item, "role '\(role.name)' is defined twice (first at \(first.line):\(first.column))")
                continue
            }
            seen[role.name] = location(item)
            result.append((role, item))
        }
        return result
    }

    mutating func role(_ node: Node) -> SessionRole? {
        guard node.mapping != nil else {
            error(node, "a role must be a mapping such as {name: media, priority: 10}")
            return nil
        }
        let fields = pairs(node, what: "a session role", allowed: ConfigurationParser.roleKeys)
        guard let nameNode = fields.first(where: { $0.key == "name" })?.value else {
            if !fields.isEmpty { error(node, "a session role needs a `name`") }
            return nil
        }
        guard let name = string(nameNode, "role name") else { return nil }
        guard name.count <= ConfigurationParser.maximumIDLength,
              name.range(of: "^[A-Za-z_][A-Za-z0-9_.-]*$", options: .regularExpression) != nil else {
            error(nameNode, "role name '\(Diagnostic.excerpt(name))' must start with a letter, hold only letters, digits, '_', '-', '.', and be at most \(ConfigurationParser.maximumIDLength) characters")
            return nil
        }
        var role = SessionRole(name: name, priority: 0)
        var sawPriority = false
        for (key, _, value) in fields {
            let what = "role '\(name)': \(key)"
            switch key {
            case "priority":
                sawPriority = true
                role.priority = integer(value, what, in: SessionRole.priorityRange) ?? role.priority
            case "interrupts": role.interrupts = roleNames(value, what)
            case "ducks": role.ducks = roleNames(value, what)
            case "duck_db":
                guard let text = string(value, what) else { continue }
                guard let decibels = Double(text.replacingOccurrences(of: "dB", with: "").trimmingCharacters(in: .whitespaces)), decibels.isFinite else {
                    error(value, "\(what) must be a number of decibels, not '\(Diagnostic.excerpt(text))'")
                    continue
                }
                if decibels >= 0 { error(value, "\(what) \(text) must be below 0 (a duck lowers the others)") }
                else if decibels < SessionRole.duckRange.lowerBound { error(value, "\(what) \(text) is below \(Int(SessionRole.duckRange.lowerBound)) dB, the deepest duck (for silence, interrupt instead)") }
                else { role.duckDB = decibels }
            case "attack_ms": role.attackMilliseconds = integer(value, what, in: SessionRole.rampRange) ?? role.attackMilliseconds
            case "release_ms": role.releaseMilliseconds = integer(value, what, in: SessionRole.rampRange) ?? role.releaseMilliseconds
            case "may_record": role.mayRecord = boolean(value, what) ?? role.mayRecord
            default: break
            }
        }
        if !sawPriority { error(node, "role '\(name)' needs a `priority` (\(SessionRole.priorityRange.lowerBound)…\(SessionRole.priorityRange.upperBound); higher wins)") }
        return role
    }

    /// A role name or a list of them; each keeps its node so a wrong one is pointed at.
    mutating func roleNames(_ node: Node, _ what: String) -> [String] {
        var names: [String] = []
        for item in node.sequence ?? [node] {
            guard let name = string(item, "\(what) entry") else { continue }
            names.append(name)
        }
        return names
    }

    /// What `role` interrupts and ducks must be other roles, each named once, and what it
    /// interrupts of lower priority (the higher one wins: it would refuse this role instead).
    mutating func checkReferences(of role: SessionRole, at node: Node, among roles: [SessionRole]) {
        let names = roles.map(\.name)
        for key in ["interrupts", "ducks"] {
            guard let value = node.mapping?.first(where: { $0.key.scalar?.string == key })?.value else { continue }
            var seen: Set<String> = []
            for item in value.sequence ?? [value] {
                guard let name = item.scalar?.string else { continue }
                guard let other = roles.first(where: { $0.name == name }) else {
                    error(item, "role '\(role.name)': \(key) names no role '\(Diagnostic.excerpt(name))'\(suggestion(for: name, in: names))\(Self.known(names))")
                    continue
                }
                guard seen.insert(name).inserted else { error(item, "role '\(role.name)': \(key) names '\(name)' twice"); continue }
                if name == role.name {
                    error(item, "role '\(role.name)' \(key) itself; a session never \(key == "interrupts" ? "interrupts" : "ducks") its own role")
                } else if key == "interrupts", other.priority >= role.priority {
                    error(item, "role '\(role.name)' (priority \(role.priority)) cannot interrupt '\(name)' (priority \(other.priority)): a role interrupts only roles of lower priority")
                }
            }
        }
    }

    /// `categories:` — category name → role name.
    mutating func categories(_ node: Node) -> [(category: SessionCategory, role: String, node: Node)] {
        let names = SessionCategory.names
        let fields = pairs(node, what: "session.categories", allowed: names) { name in
            "session.categories: '\(Diagnostic.excerpt(name))' is not a category\(suggestion(for: name, in: names)) (categories: \(names.joined(separator: ", ")))"
        }
        var result: [(SessionCategory, String, Node)] = []
        for (key, _, value) in fields {
            guard let category = SessionCategory(rawValue: key), let role = string(value, "session.categories.\(key)") else { continue }
            result.append((category, role, value))
        }
        return result
    }
}
