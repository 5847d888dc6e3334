/// One port of an LV2 plugin, as its Turtle describes it.
public struct LV2Port: Hashable, Sendable, Codable {
    public enum Kind: String, Hashable, Sendable, Codable {
        case audio, control, cv, atom
        /// A port of a type Sonora does not know (e.g. the obsolete event port); connected to nothing if optional.
        case unknown
    }

    public enum Direction: String, Hashable, Sendable, Codable {
        case input, output
    }

    public struct ScalePoint: Hashable, Sendable, Codable {
        public var value: Float
        public var label: String
    }

    public var index: Int
    public var symbol: String
    public var name: String
    public var kind: Kind
    public var direction: Direction
    /// Range as declared (before `lv2:sampleRate` scaling); nil where the Turtle gives none.
    public var minimum: Float?
    public var maximum: Float?
    public var defaultValue: Float?
    public var properties: Set<String>
    /// `lv2:designation` (pg:left, lv2:latency, lv2:enabled …).
    public var designation: String?
    /// `pg:group`, the port group URI.
    public var group: String?
    /// `units:unit` URI.
    public var unit: String?
    public var scalePoints: [ScalePoint]
    /// `rsz:minimumSize` in bytes, for atom ports.
    public var minimumSize: Int?
    /// `atom:supports` types (midi:MidiEvent …).
    public var supports: [String]

    public var isOptional: Bool { properties.contains(LV2URI.connectionOptional) }
    public var isToggled: Bool { properties.contains(LV2URI.toggled) }
    public var isInteger: Bool { properties.contains(LV2URI.integer) }
    public var isEnumeration: Bool { properties.contains(LV2URI.enumeration) }
    public var isLogarithmic: Bool { properties.contains(LV2URI.logarithmic) }
    public var isSampleRateScaled: Bool { properties.contains(LV2URI.sampleRate) }
    public var isSideChain: Bool { properties.contains(LV2URI.isSideChain) }
    /// The control output through which the plugin reports its latency in frames.
    public var reportsLatency: Bool {
        kind == .control && direction == .output
            && (properties.contains(LV2URI.reportsLatency) || designation == LV2URI.latency)
    }
    public var takesMIDI: Bool { supports.contains(LV2URI.midiEvent) }
}
