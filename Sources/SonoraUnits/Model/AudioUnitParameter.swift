/// Identifies a parameter within a scope and element (`AudioUnitParameterID`).
public typealias AudioUnitParameterID = UInt32

/// The unit a parameter's value is in (`AudioUnitParameterUnit`), with Core Audio's values.
public enum AudioUnitParameterUnit: UInt32, Hashable, Sendable, Codable {
    case generic = 0, indexed = 1, boolean = 2, percent = 3, seconds = 4, sampleFrames = 5, phase = 6
    case rate = 7, hertz = 8, cents = 9, relativeSemiTones = 10, midiNoteNumber = 11, midiController = 12
    case decibels = 13, linearGain = 14, degrees = 15, equalPowerCrossfade = 16, mixerFaderCurve1 = 17
    case pan = 18, meters = 19, absoluteCents = 20, octaves = 21, bpm = 22, beats = 23, milliseconds = 24
    case ratio = 25, customUnit = 26

    /// The symbol used when printing or parsing values (`dB`, `Hz` …), empty for none.
    public var symbol: String {
        switch self {
        case .decibels: "dB"
        case .hertz: "Hz"
        case .seconds: "s"
        case .milliseconds: "ms"
        case .percent: "%"
        case .cents, .absoluteCents: "cents"
        case .degrees: "°"
        case .sampleFrames: "frames"
        case .octaves: "oct"
        case .bpm: "BPM"
        default: ""
        }
    }
}

/// What can be done with a parameter (`AudioUnitParameterOptions` flags).
public struct AudioUnitParameterFlags: OptionSet, Hashable, Sendable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let cfNameRelease = AudioUnitParameterFlags(rawValue: 1 << 4)
    public static let meterReadOnly = AudioUnitParameterFlags(rawValue: 1 << 15)
    public static let displayLogarithmic = AudioUnitParameterFlags(rawValue: 1 << 22)
    public static let isHighResolution = AudioUnitParameterFlags(rawValue: 1 << 23)
    public static let nonRealTime = AudioUnitParameterFlags(rawValue: 1 << 24)
    public static let canRamp = AudioUnitParameterFlags(rawValue: 1 << 25)
    public static let expertMode = AudioUnitParameterFlags(rawValue: 1 << 26)
    public static let isElementMeta = AudioUnitParameterFlags(rawValue: 1 << 28)
    public static let isGlobalMeta = AudioUnitParameterFlags(rawValue: 1 << 29)
    public static let isWritable = AudioUnitParameterFlags(rawValue: 1 << 30)
    public static let isReadable = AudioUnitParameterFlags(rawValue: 1 << 31)

    public static let readWrite: AudioUnitParameterFlags = [.isReadable, .isWritable]
}

/// Everything a host needs to show and set a parameter (`AudioUnitParameterInfo`).
public struct AudioUnitParameterInfo: Hashable, Sendable {
    public var name: String
    /// Short machine name used in config files and the control socket (`gain`, `frequency`).
    public var identifier: String
    public var unit: AudioUnitParameterUnit
    public var minValue: Float
    public var maxValue: Float
    public var defaultValue: Float
    public var flags: AudioUnitParameterFlags
    /// Names of the values of an indexed parameter, from `minValue` up.
    public var valueStrings: [String]

    public init(
        name: String, identifier: String, unit: AudioUnitParameterUnit, minValue: Float, maxValue: Float,
        defaultValue: Float, flags: AudioUnitParameterFlags = .readWrite, valueStrings: [String] = []
    ) {
        self.name = name
        self.identifier = identifier
        self.unit = unit
        self.minValue = minValue
        self.maxValue = maxValue
        self.defaultValue = defaultValue
        self.flags = flags
        self.valueStrings = valueStrings
    }

    /// `value` clamped into `minValue...maxValue` (NaN becomes the default).
    public func clamp(_ value: Float) -> Float {
        guard !value.isNaN else { return defaultValue }
        return min(max(value, minValue), maxValue)
    }
}

/// One parameter a unit declares: its ID, the scope it lives in, and its info. A
/// parameter declared in the input or output scope exists once per element.
public struct AudioUnitParameterDefinition: Sendable {
    public var id: AudioUnitParameterID
    public var scope: AudioUnitScope
    public var info: AudioUnitParameterInfo

    public init(_ id: AudioUnitParameterID, scope: AudioUnitScope = .global, _ info: AudioUnitParameterInfo) {
        self.id = id
        self.scope = scope
        self.info = info
    }
}

/// How a parameter value was taken: the value applied, and whether it had to be clamped.
public struct ParameterChange: Hashable, Sendable {
    public var requested: Float
    public var applied: Float
    public var wasClamped: Bool { requested != applied }
}
