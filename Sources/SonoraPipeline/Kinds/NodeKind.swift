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
    /// Values of a node's sources (its input elements, addressed as `NODE.SOURCE` on the
    /// control socket) that map onto several of the unit's parameters: a mixer3d source's
    /// `position`.
    public let sourceParameters: [SourceParameter]
    /// The kind's options as the running unit now stands (`save` writes these, so a source
    /// moved over the control socket is saved where it is); nil: the options as written.
    let currentOptions: (@Sendable (NodeSpec, AudioUnit) -> [String: OptionValue])?
    /// Parameters the kind's options already carry, left out of `save`'s `parameters`.
    let isSavedByOptions: (@Sendable (AudioUnitParameterDefinition) -> Bool)?
    /// Makes the node's unit and applies the kind's options; reports problems to `build`
    /// and returns nil when the unit cannot be made.
    let make: @Sendable (inout NodeBuild) -> AudioUnit?

    public init(
        name: String, aliases: [String] = [], summary: String, options: [NodeOption] = [], usesEngineFormat: Bool = true,
        sourceParameters: [SourceParameter] = [],
        currentOptions: (@Sendable (NodeSpec, AudioUnit) -> [String: OptionValue])? = nil,
        isSavedByOptions: (@Sendable (AudioUnitParameterDefinition) -> Bool)? = nil,
        make: @escaping @Sendable (inout NodeBuild) -> AudioUnit?
    ) {
        self.name = name
        self.aliases = aliases
        self.summary = summary
        self.options = options
        self.usesEngineFormat = usesEngineFormat
        self.sourceParameters = sourceParameters
        self.currentOptions = currentOptions
        self.isSavedByOptions = isSavedByOptions
        self.make = make
    }

    /// Keys every node takes, whatever its kind.
    public static let commonKeys = ["id", "kind", "parameters", "preset", "bypass", "channels", "comment"]

    /// Every name this kind answers to.
    public var names: [String] { [name] + aliases }

    public func option(_ key: String) -> NodeOption? { options.first { $0.key == key } }
}

/// A kind-specific option of a node: its key, the type of its value, and what it means.
public struct NodeOption: Sendable, Hashable {
    public enum ValueType: Sendable, Hashable {
        case boolean
        case integer(ClosedRange<Int>)
        /// An absolute URI (checked before anything else sees it).
        case uri
        /// A file that must exist and be readable (relative to the config's folder).
        case inputFile
        /// A file to write (relative to the config's folder); its folder must exist.
        case outputFile
        /// A finite number in a range; `unit` (such as `dB`), when given, may follow it.
        case number(ClosedRange<Double>, unit: String? = nil)
        /// One of a few words (case-insensitive; read as the word listed).
        case choice([String])
        /// A point `[x, y, z]` of finite numbers.
        case point
        /// A list of whole numbers, each in the range.
        case integers(ClosedRange<Int>)
        /// A name: a letter or `_`, then letters, digits, `_` and `-` (at most 64 characters).
        case name
        /// A list of mappings, each taking these fields (a required field must be in every item).
        case list([NodeOption])
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
    case number(Double)
    case point(SIMD3<Double>)
    case integers([Int])
    /// A list option's items, each field with where it was written.
    case list([[String: LocatedOption]])

    public var description: String {
        switch self {
        case .boolean(let flag): flag ? "true" : "false"
        case .integer(let number): String(number)
        case .text(let text): text
        case .number(let number): Self.format(number)
        case .point(let point): "[\(Self.format(point.x)), \(Self.format(point.y)), \(Self.format(point.z))]"
        case .integers(let numbers): "[" + numbers.map(String.init).joined(separator: ", ") + "]"
        case .list(let items): "[" + items.map { item in
            "{" + item.keys.sorted().map { "\($0): \(item[$0]!.value)" }.joined(separator: ", ") + "}"
        }.joined(separator: ", ") + "]"
        }
    }

    /// A number as configs write it: whole numbers without a fraction, others shortest.
    static func format(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }

    public var text: String? { if case .text(let text) = self { text } else { nil } }
    public var boolean: Bool? { if case .boolean(let flag) = self { flag } else { nil } }
    public var integer: Int? { if case .integer(let number) = self { number } else { nil } }
    public var number: Double? { if case .number(let number) = self { number } else { nil } }
    public var point: SIMD3<Double>? { if case .point(let point) = self { point } else { nil } }
    public var integers: [Int]? { if case .integers(let numbers) = self { numbers } else { nil } }
    public var list: [[String: LocatedOption]]? { if case .list(let items) = self { items } else { nil } }
}

/// An option value and where it was written.
public struct LocatedOption: Sendable, Hashable {
    public var value: OptionValue
    public var location: SourceLocation

    public init(value: OptionValue, location: SourceLocation) {
        self.value = value
        self.location = location
    }
}
