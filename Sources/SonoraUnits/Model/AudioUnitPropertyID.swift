/// A property of an audio unit (`AudioUnitPropertyID`), with Core Audio's values.
public struct AudioUnitPropertyID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let classInfo = AudioUnitPropertyID(rawValue: 0)
    public static let makeConnection = AudioUnitPropertyID(rawValue: 1)
    public static let sampleRate = AudioUnitPropertyID(rawValue: 2)
    public static let parameterList = AudioUnitPropertyID(rawValue: 3)
    public static let parameterInfo = AudioUnitPropertyID(rawValue: 4)
    public static let streamFormat = AudioUnitPropertyID(rawValue: 8)
    public static let elementCount = AudioUnitPropertyID(rawValue: 11)
    public static let latency = AudioUnitPropertyID(rawValue: 12)
    public static let maximumFramesPerSlice = AudioUnitPropertyID(rawValue: 14)
    public static let parameterValueStrings = AudioUnitPropertyID(rawValue: 16)
    public static let audioChannelLayout = AudioUnitPropertyID(rawValue: 19)
    public static let tailTime = AudioUnitPropertyID(rawValue: 20)
    public static let bypassEffect = AudioUnitPropertyID(rawValue: 21)
    public static let lastRenderError = AudioUnitPropertyID(rawValue: 22)
    public static let setRenderCallback = AudioUnitPropertyID(rawValue: 23)
    public static let factoryPresets = AudioUnitPropertyID(rawValue: 24)
    public static let elementName = AudioUnitPropertyID(rawValue: 30)
    public static let presentPreset = AudioUnitPropertyID(rawValue: 36)
    /// Whether a mixer measures levels on an element (its meter parameters); off by default.
    public static let meteringMode = AudioUnitPropertyID(rawValue: 3007)
    // The 3D mixer's (Core Audio's numbers; the HRTF file is Sonora's own, in the custom range).
    public static let spatializationAlgorithm = AudioUnitPropertyID(rawValue: 3000)
    public static let renderingFlags = AudioUnitPropertyID(rawValue: 3003)
    public static let distanceParameters = AudioUnitPropertyID(rawValue: 3010)
    /// Core Audio's name for `distanceParameters`.
    public static let distanceParams = distanceParameters
    public static let attenuationCurve = AudioUnitPropertyID(rawValue: 3013)
    /// The SOFA file a 3D mixer's HRTF inputs use (global; a path).
    public static let hrtfFilePath = AudioUnitPropertyID(rawValue: 64_300)
    // Output units (AudioOutputUnit properties).
    public static let currentDevice = AudioUnitPropertyID(rawValue: 2000)
    public static let isRunning = AudioUnitPropertyID(rawValue: 2001)
    public static let enableIO = AudioUnitPropertyID(rawValue: 2003)
    public static let setInputCallback = AudioUnitPropertyID(rawValue: 2005)
    public static let hasIO = AudioUnitPropertyID(rawValue: 2006)

    static let names: [AudioUnitPropertyID: String] = [
        .classInfo: "ClassInfo", .makeConnection: "MakeConnection", .sampleRate: "SampleRate",
        .parameterList: "ParameterList", .parameterInfo: "ParameterInfo", .streamFormat: "StreamFormat",
        .elementCount: "ElementCount", .latency: "Latency", .maximumFramesPerSlice: "MaximumFramesPerSlice",
        .parameterValueStrings: "ParameterValueStrings", .tailTime: "TailTime", .bypassEffect: "BypassEffect",
        .lastRenderError: "LastRenderError", .setRenderCallback: "SetRenderCallback",
        .factoryPresets: "FactoryPresets", .elementName: "ElementName", .presentPreset: "PresentPreset",
        .audioChannelLayout: "AudioChannelLayout", .meteringMode: "MeteringMode",
        .spatializationAlgorithm: "SpatializationAlgorithm", .renderingFlags: "3DMixerRenderingFlags",
        .distanceParameters: "3DMixerDistanceParams", .attenuationCurve: "3DMixerAttenuationCurve",
        .hrtfFilePath: "HRTFFilePath",
        .auxiliaryBusCount: "AuxiliaryBusCount",
        .currentDevice: "CurrentDevice", .isRunning: "IsRunning", .enableIO: "EnableIO",
        .setInputCallback: "SetInputCallback", .hasIO: "HasIO",
    ]

    public var description: String { Self.names[self] ?? "property \(rawValue)" }
}
