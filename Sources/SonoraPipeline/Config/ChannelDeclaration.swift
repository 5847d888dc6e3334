/// A node's `channels:` as written: one width for every element (`channels: 2`), or per
/// scope — one width for each of its elements, or a list with one per element
/// (`channels: {input: [1, 1], output: 2}`). What is not declared is inferred.
public struct ChannelDeclaration: Sendable, Hashable {
    public enum Widths: Sendable, Hashable, CustomStringConvertible {
        case all(Int)
        case perElement([Int])

        public func width(_ element: Int) -> Int? {
            switch self {
            case .all(let width): width
            case .perElement(let widths): element < widths.count ? widths[element] : nil
            }
        }

        public var description: String {
            switch self {
            case .all(let width): "\(width)"
            case .perElement(let widths): "[\(widths.map(String.init).joined(separator: ", "))]"
            }
        }
    }

    public var input: Widths?
    public var output: Widths?
    public var location: SourceLocation

    public init(input: Widths?, output: Widths?, location: SourceLocation) {
        self.input = input
        self.output = output
        self.location = location
    }

    /// Widest a bus may be (the engine's limit).
    public static let range = 1...32

    /// As a config writes it.
    public var yaml: String {
        if let input, input == output, case .all = input { return "\(input)" }
        return "{" + [input.map { "input: \($0)" }, output.map { "output: \($0)" }].compactMap { $0 }.joined(separator: ", ") + "}"
    }
}

extension ConfigurationSchema {
    /// `channels:` — a width, or per scope a width or one per element.
    static var channelsSchema: [String: Any] {
        let width: [String: Any] = ["type": "integer", "minimum": ChannelDeclaration.range.lowerBound, "maximum": ChannelDeclaration.range.upperBound]
        let widths: [String: Any] = ["oneOf": [width, ["type": "array", "items": width, "minItems": 1]]]
        return [
            "description": "channels per element: one width for all, or {input, output} each a width or one per element; inferred from the sources when left out",
            "oneOf": [width, ["type": "object", "additionalProperties": false, "properties": ["input": widths, "output": widths]]],
        ]
    }
}
