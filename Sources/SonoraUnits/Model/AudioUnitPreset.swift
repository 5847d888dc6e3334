/// A named set of parameter values (`AUPreset`): factory presets have
/// non-negative numbers, user presets negative ones.
public struct AudioUnitPreset: Hashable, Sendable, Codable {
    public var number: Int
    public var name: String

    public init(number: Int, name: String) {
        self.number = number
        self.name = name
    }
}

/// The whole restorable state of a unit (the ClassInfo property): what the
/// component is, the present preset, and every parameter value by address.
public struct AudioUnitState: Hashable, Sendable, Codable {
    public struct ParameterValue: Hashable, Sendable, Codable {
        public var id: AudioUnitParameterID
        public var scope: UInt32
        public var element: Int
        public var value: Float
    }

    public var type: String
    public var subType: String
    public var manufacturer: String
    public var version: Int
    public var presentPreset: AudioUnitPreset?
    public var parameters: [ParameterValue]
    /// Unit-specific extras (e.g. an LV2 plugin's state), as text.
    public var extra: [String: String]
}
