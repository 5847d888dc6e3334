import SonoraCore

/// A pipeline as its config file describes it: the engine format, the device, the nodes
/// and their settings, the connections, control and status. Every value keeps where it
/// was written so later checks can point at it.
public struct PipelineConfiguration: Sendable {
    public var file: String
    public var engine = Engine()
    public var device = Device()
    public var nodes: [NodeSpec] = []
    public var connections: [ConnectionSpec] = []
    public var control = Control()
    public var status = Status()

    public struct Engine: Sendable {
        public var sampleRate = 48000
        public var periodFrames = 256
        public var periods = 2
        public var channels = 2
        public var location: SourceLocation?
    }

    public struct Device: Sendable {
        /// ALSA PCM names, or "null"; nil: that direction is not used.
        public var playback: String? = "null"
        public var capture: String?
        /// Run on the null device when the ALSA device cannot be opened.
        public var fallbackToNull = false
        public var priority: Int32 = 70
        /// Offline: the file the `input` node reads and the file `output` writes.
        public var inputFile: String?
        public var outputFile: String?
        public var location: SourceLocation?
    }

    public struct Control: Sendable {
        public var socketPath: String?
        /// A client that sends nothing for this long gets an error and is closed.
        public var idleTimeout = 10.0
        public var location: SourceLocation?
    }

    public struct Status: Sendable {
        /// Seconds between status lines; 0 turns them off.
        public var interval = 1.0
        /// Nodes whose meters the status line shows.
        public var meters: [String] = []
    }
}

/// One node of the graph.
public struct NodeSpec: Sendable {
    public var id: String
    /// The kind as written (`GraphicEQ`, `player`, `recorder`, `lv2` …).
    public var kind: String
    public var location: SourceLocation
    public var kindLocation: SourceLocation
    public var parameters: [ParameterSetting] = []
    public var preset: (value: String, location: SourceLocation)?
    /// Kind-specific settings: `file`, `loop`, `inputs`, `uri`, `bypass` …
    public var options: [String: (value: String, location: SourceLocation)] = [:]
}

/// A parameter value for a node: by name or by ID, at a scope and element.
public struct ParameterSetting: Sendable {
    public enum Address: Sendable, Hashable {
        case name(String)
        case id(UInt32)
    }

    public var address: Address
    public var scope: String?
    public var element: Int?
    /// The value as written: `-6 dB`, `1.2 kHz`, `0.5`, `on`.
    public var value: String
    /// Ramp (seconds) when applied to a running pipeline.
    public var ramp: Double?
    public var location: SourceLocation
    public var valueLocation: SourceLocation
}

/// `from: node[:bus]` → `to: node[:input]`.
public struct ConnectionSpec: Sendable {
    public var from: String
    public var fromBus: Int
    public var to: String
    public var toInput: Int
    public var location: SourceLocation
    public var fromLocation: SourceLocation
    public var toLocation: SourceLocation
}
