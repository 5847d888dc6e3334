import Foundation
import SonoraCore

/// A pipeline as its config file describes it: the engine format, the device, the nodes
/// and their settings, the connections, control and status. Every value keeps where it
/// was written so later checks can point at it.
public struct PipelineConfiguration: Sendable {
    /// The config format's version this build reads and writes (`version:` at the top; optional).
    public static let formatVersion = 1

    public var file: String
    public var version = PipelineConfiguration.formatVersion
    public var engine = Engine()
    public var device = Device()
    public var nodes: [NodeSpec] = []
    public var connections: [ConnectionSpec] = []
    public var control = Control()
    public var status = Status()
    /// The session server's policy (nil: no `session:` section, no session server).
    public var session: Session?
    /// The metrics endpoint (nil: no `metrics:` section, no listener).
    public var metrics: Metrics?
    /// The graph transport's start state (nil: no `transport:` section; stopped, 120 BPM, 4/4).
    public var transport: TransportSettings?
    /// Problems the parser found in nodes' kinds and options. They do not stop the parse,
    /// so the builder still checks the rest and every problem is reported in one pass.
    public var nodeProblems: [Diagnostic] = []

    public init(file: String) { self.file = file }

    public struct Engine: Sendable {
        public var sampleRate = 48000
        public var periodFrames = 256
        public var periods = 2
        public var channels = 2
        public var location: SourceLocation?
    }

    public struct Device: Sendable {
        /// Device names as the HAL reads them (`DeviceSpecifier`: an ALSA PCM, `null`, `sonoraloop:NAME`,
        /// `inprocess:N` …); nil: that direction is not used.
        public var playback: String? = "null"
        public var capture: String?
        /// Run on the null device when the ALSA device cannot be opened.
        public var fallbackToNull = false
        public var priority: Int32 = 70
        /// `voice_processing: on`: the voice-processing I/O unit heads the graph instead of the
        /// plain I/O unit, so the capture is echo-cancelled against exactly what the device plays.
        public var voiceProcessing = false
        public var voiceProcessingLocation: SourceLocation?
        /// `wake_up: timer`: the I/O thread wakes on a timer predicted from the device's
        /// pointer, `headroom_us` before the period is ready (ALSA devices).
        public var wakesOnTimer = false
        public var headroomMicroseconds: Int?
        public var headroomLocation: SourceLocation?
        /// Offline: the file the `input` node reads and the file `output` writes.
        public var inputFile: String?
        public var outputFile: String?
        public var location: SourceLocation?
        public var playbackLocation: SourceLocation?
        public var captureLocation: SourceLocation?
    }

    public struct Control: Sendable {
        /// As written; `PipelineConfiguration.socketPath` is the resolved one.
        public var socketPath: String?
        /// A request must arrive whole within this many seconds of its first byte (or of
        /// connecting); otherwise the client gets an error and is closed.
        public var requestTimeout = 10.0
        public var location: SourceLocation?
        public var socketLocation: SourceLocation?
    }

    public struct Status: Sendable {
        /// Seconds between status lines; 0 turns them off.
        public var interval = 1.0
        /// Nodes whose meters the status line shows, and where each was named.
        public var meters: [String] = []
        public var meterLocations: [SourceLocation] = []
    }

    /// The config's folder: every relative path in a config — files, the control socket —
    /// is relative to it, never to the working directory.
    public var folder: String {
        var config = file
        if !config.hasPrefix("/") { config = FileManager.default.currentDirectoryPath + "/" + config }
        return Self.normalized((config as NSString).deletingLastPathComponent)
    }

    /// `path` as written in this config, made absolute against the config's folder.
    /// `.` and `..` are resolved in the text only: symbolic links stay as written, so a
    /// check looks at the link itself (a control socket path that is a symlink is refused).
    public func resolvedPath(_ path: String) -> String {
        Self.normalized(path.hasPrefix("/") ? path : folder + "/" + path)
    }

    /// An absolute path with `.`, `..` and repeated slashes removed, without touching the file system.
    static func normalized(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": if !parts.isEmpty { parts.removeLast() }
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// The control socket's path, resolved (nil: no control socket).
    public var socketPath: String? { control.socketPath.map(resolvedPath) }
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
    public var bypass: LocatedOption?
    /// Channels per element as declared (`channels:`); the rest is inferred from the sources.
    public var channels: ChannelDeclaration?
    /// The kind's own options (`file`, `loop`, `inputs`, `uri` …), typed as the kind says.
    public var options: [String: LocatedOption] = [:]
    /// Options given but refused by the parser (reported in `nodeProblems`).
    public var invalidOptions: Set<String> = []

    public init(id: String, kind: String, location: SourceLocation, kindLocation: SourceLocation) {
        self.id = id
        self.kind = kind
        self.location = location
        self.kindLocation = kindLocation
    }

    /// The kind's description (nil only for a kind the parser already reported).
    public var nodeKind: NodeKind? { NodeKindCatalog.standard.kind(named: kind) }
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
