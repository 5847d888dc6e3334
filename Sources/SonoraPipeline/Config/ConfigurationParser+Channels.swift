import Yams

extension ConfigurationParser.Walker {
    /// A node's `channels:` — `N`, or `{input: N | [N, …], output: N | [N, …]}`.
    mutating func channelDeclaration(_ node: Node, node id: String) -> ChannelDeclaration? {
        let what = "channels of node '\(id)'"
        if node.scalar != nil {
            guard let width = integer(node, what, in: ChannelDeclaration.range) else { return nil }
            return ChannelDeclaration(input: .all(width), output: .all(width), location: location(node))
        }
        guard node.mapping != nil else {
            error(node, "\(what) must be a number of channels (`channels: 2`) or {input: …, output: …} with a number or a list per element")
            return nil
        }
        var declaration = ChannelDeclaration(input: nil, output: nil, location: location(node))
        for (key, _, value) in pairs(node, what: what, allowed: ["input", "output"]) {
            guard let widths = widths(value, "\(key) \(what)") else { return nil }
            if key == "input" { declaration.input = widths } else { declaration.output = widths }
        }
        return declaration
    }

    private mutating func widths(_ node: Node, _ what: String) -> ChannelDeclaration.Widths? {
        guard let items = node.sequence else {
            return integer(node, what, in: ChannelDeclaration.range).map(ChannelDeclaration.Widths.all)
        }
        guard !items.isEmpty else { error(node, "\(what) is an empty list; give one width per element"); return nil }
        var widths: [Int] = []
        for (index, item) in items.enumerated() {
            guard let width = integer(item, "\(what), element \(index)", in: ChannelDeclaration.range) else { return nil }
            widths.append(width)
        }
        return .perElement(widths)
    }
}
