/// The one list of control commands: the request decoder, the `version` answer, the
/// "unknown command" suggestions and `sonora ctl --help` all derive from it.
public enum ControlCommand: String, CaseIterable, Codable, Sendable {
    case nodes
    case params
    case get
    case set
    case getProperty = "get-property"
    case setProperty = "set-property"
    case meters
    case status
    case reload
    case save
    case device
    case version
    case metrics
    case transport
    case patch

    /// The name on the wire (`"cmd"`).
    public var name: String { rawValue }

    /// Fields the command must have (besides `cmd`).
    public var requiredFields: [String] {
        switch self {
        case .nodes, .meters, .status, .reload, .version, .metrics: []
        case .params: ["node"]
        case .get: ["node", "param"]
        case .set: ["node", "param", "value"]
        case .getProperty: ["node", "property"]
        case .setProperty: ["node", "property", "value"]
        case .save: ["path"]
        case .device, .transport: []
        case .patch: ["node"]
        }
    }

    /// Fields the command may have (besides `cmd` and `version`).
    public var optionalFields: [String] {
        switch self {
        case .get: ["scope", "element"]
        case .set: ["scope", "element", "ramp"]
        case .save: ["overwrite"]
        case .device: ["playback", "capture"]
        case .transport: TransportRequest.fields
        case .patch: PatchRequest.optionalFields
        default: []
        }
    }

    /// Every field a request for this command may carry.
    public var allowedFields: [String] { ["cmd", "version"] + requiredFields + optionalFields }

    /// What it does, for help texts (short: it shares a line with its usage).
    public var summary: String {
        switch self {
        case .nodes: "the pipeline's nodes (id, kind, unit)"
        case .params: "a node's parameters: values, ranges, units"
        case .get: "one parameter's value"
        case .set: "sets a parameter (\"-6 dB\"), --ramp seconds"
        case .getProperty: "a node's latency, bypass, preset or tail"
        case .setProperty: "sets bypass (on/off) or preset (a name)"
        case .meters: "every meter of every node"
        case .status: "device, cycles, xruns, load, latency"
        case .reload: "re-reads the config file (refused if invalid)"
        case .save: "writes the running pipeline as a config (an existing file only with overwrite)"
        case .device: "moves the running pipeline to another device (same rate and period); attached programs get a route change"
        case .version: "the protocol's and Sonora's versions"
        case .metrics: "xruns, load, lateness, meters, reloads, clients in Prometheus' text format"
        case .transport: "the graph transport: play, stop, locate a beat, tempo, meter (\"at\": an exact sample time)"
        case .patch: "an LV2 node's patch properties by URI, label or URID; sets one with value"
        }
    }

    /// An example request line.
    public var example: String {
        switch self {
        case .nodes: #"{"cmd":"nodes"}"#
        case .params: #"{"cmd":"params","node":"eq"}"#
        case .get: #"{"cmd":"get","node":"mix","param":"volume","scope":"input","element":1}"#
        case .set: #"{"cmd":"set","node":"mix","param":"volume","scope":"input","element":1,"value":"-6 dB","ramp":0.2}"#
        case .getProperty: #"{"cmd":"get-property","node":"eq","property":"preset"}"#
        case .setProperty: #"{"cmd":"set-property","node":"eq","property":"bypass","value":true}"#
        case .meters: #"{"cmd":"meters"}"#
        case .status: #"{"cmd":"status"}"#
        case .reload: #"{"cmd":"reload"}"#
        case .save: #"{"cmd":"save","path":"/etc/sonora/now.yaml"}"#
        case .device: #"{"cmd":"device","playback":"hw:Headphones"}"#
        case .version: #"{"cmd":"version"}"#
        case .metrics: #"{"cmd":"metrics"}"#
        case .transport: #"{"cmd":"transport","action":"tempo","tempo":96}"#
        case .patch: #"{"cmd":"patch","node":"synth","property":"http://example.org/plugin#gain","value":0.5}"#
        }
    }

    /// The command's name, or nil with a message naming the commands (and the closest one).
    static func named(_ name: String) -> Result<ControlCommand, ControlFailure> {
        if let command = ControlCommand(rawValue: name) { return .success(command) }
        let names = allCases.map(\.name)
        let hint = suggestion(for: String(name.prefix(64)), in: names)
        return .failure(ControlFailure(.unknownCommand, field: "cmd", "unknown command '\(Diagnostic.excerpt(name))'\(hint) (commands: \(names.joined(separator: ", ")))"))
    }
}

/// Properties a node has on the control socket.
public enum ControlProperty: String, CaseIterable, Codable, Sendable {
    case latency, bypass, preset, tail

    /// The ones `set-property` may change.
    public static let settable: [ControlProperty] = [.bypass, .preset]
}
