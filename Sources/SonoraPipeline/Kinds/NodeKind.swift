import SonoraCore
import SonoraUnits

/// One kind of pipeline node — `player`, `GraphicEQ`, `lv2` … — described once: its
/// names, the options it takes (typed, documented), and how its unit is built and
/// checked. The parser, the validation, `sonora schema`, `save`, the builder and the
/// documentation test all read this description, so they cannot disagree.
///
/// A new kind is one file in this folder (a `static let` on `NodeKind`) and one line in
/// `NodeKindCatalog.standard`.
public struct NodeKind: Sendable {
    /// The name configs use and `save` writes.
    public let name: String
    /// Other names accepted for `kind` (case does not matter for any of them).
    public let aliases: [String]
    public let summary: String
    /// Options besides the ones every node takes (`NodeKind.commonKeys`).
    public let options: [NodeOption]
    /// Whether every element runs at the engine's format (LV2 plugins keep their buses' own).
    public let usesEngineFormat: Bool
    /// Makes the node's unit and applies the kind's options; reports problems to `build`
    /// and returns nil when the unit cannot be made.
    let make: @Sendable (inout NodeBuild) -> AudioUnit?

    public init(
        name: String, aliases: [String] = [], summary: String, options: [NodeOption] = [], usesEngineFormat: Bool = true,
        make: @escaping @Sendable (inout NodeBuild) -> AudioUnit?
    ) {
        self.name = name
        self.aliases = aliases
        self.summary = summary
        self.options = options
        self.usesEngineFormat = usesEngineFormat
        self.make = make
    }

    /// Keys every node takes, whatever its kind.
    public static let commonKeys = ["id", "kind", "parameters", "preset", "bypass", "comment"]

    /// Every name this kind answers to.
    public var names: [String] { [name] + aliases }

    public func option(_ key: String) -> NodeOption? { options.first { $0.key == key } }
}

/// A kind-specific option of a node: its key, the type of its value, and what it means.
public struct NodeOption: Sendable {
    public enum ValueType: Sendable, Hashable {
        case boolean
        case integer(ClosedRange<Int>)
        /// An absolute URI (checked before anything else sees it).
        case uri
        /// A file that must exist and be readable (relative to the config's folder).
        case inputFile
        /// A file to write (relative to the config's folder); its folder must exist.
        case outputFile
    }

    public let key: String
    public let type: ValueType
    public let isRequired: Bool
    public let documentation: String

    public init(_ key: String, _ type: ValueType, required: Bool = false, _ documentation: String) {
        self.key = key
        self.type = type
        isRequired = required
        self.documentation = documentation
    }
}

/// A typed option value as the parser read it.
public enum OptionValue: Sendable, Hashable, CustomStringConvertible {
    case boolean(Bool)
    case integer(Int)
    case text(String)

    public var description: String {
        switch self {
        case .boolean(let flag): flag ? "true" : "false"
        case .integer(let number): String(number)
        case .text(let text): text
        }
    }

    public var text: String? { if case .text(let text) = self { text } else { nil } }
    public var boolean: Bool? { if case .boolean(let flag) = self { flag } else { nil } }
    public var integer: Int? { if case .integer(let number) = self { number } else { nil } }
}

/// An option value and where it was written.
public struct LocatedOption: Sendable, Hashable {
    public var value: OptionValue
    public var location: SourceLocation
}
