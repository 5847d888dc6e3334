import Foundation

/// An answer on the control socket, typed. Each encodes to one JSON object with `"ok"`;
/// failures carry `"code"`, `"error"` and (when one is at fault) `"field"`.
public enum ControlResponse: Equatable, Sendable {
    case nodes([NodeSummary])
    case parameters(node: String, [ParameterSummary])
    /// The answer to `get` and `set`.
    case parameter(ParameterReading)
    /// The answer to `get-property` and `set-property`.
    case property(PropertyReading)
    case meters([MeterReading])
    case status(StatusReport)
    case reloaded
    case saved(path: String)
    case version(VersionInfo)
    /// Prometheus' text exposition (format 0.0.4), whole, in `"metrics"`.
    case metrics(String)
    case transport(TransportReading)
    case patch(PatchReading)
    case failure(ControlFailure)

    public var isSuccess: Bool {
        if case .failure = self { return false }
        return true
    }

    public struct NodeSummary: Codable, Equatable, Sendable {
        public var id: String
        public var kind: String
        public var unit: String
        /// A `clients` node's attached streams (nil for every other node).
        public var streams: [ClientStreamSummary]?
        public init(id: String, kind: String, unit: String, streams: [ClientStreamSummary]? = nil) {
            self.id = id
            self.kind = kind
            self.unit = unit
            self.streams = streams
        }
    }

    /// One program's stream on the appliance, as `ctl nodes` lists it.
    public struct ClientStreamSummary: Codable, Equatable, Sendable {
        public var stream: Int
        public var pid: Int32
        public var program: String
        public var direction: String
        public var channels: Int
        /// The policy's gain now (fades, ducks), dB.
        public var gainDB: Double
        public var peakDBFS: Double
        public var underruns: Int
        public var overruns: Int
        public var faulted: Bool
        public init(stream: Int, pid: Int32, program: String, direction: String, channels: Int, gainDB: Double, peakDBFS: Double, underruns: Int, overruns: Int, faulted: Bool) {
            self.stream = stream
            self.pid = pid
            self.program = program
            self.direction = direction
            self.channels = channels
            self.gainDB = gainDB
            self.peakDBFS = peakDBFS
            self.underruns = underruns
            self.overruns = overruns
            self.faulted = faulted
        }
    }

    public struct ParameterSummary: Codable, Equatable, Sendable {
        public var id: UInt32
        public var name: String
        public var scope: String
        public var element: Int
        public var unit: String
        public var min: Double
        public var max: Double
        public var `default`: Double
        public var writable: Bool
        public var value: Double?
        /// Names of the values of an indexed parameter.
        public var values: [String]?

        public init(id: UInt32, name: String, scope: String, element: Int, unit: String, min: Double, max: Double,
                    default: Double, writable: Bool, value: Double?, values: [String]?) {
            self.id = id
            self.name = name
            self.scope = scope
            self.element = element
            self.unit = unit
            self.min = min
            self.max = max
            self.default = `default`
            self.writable = writable
            self.value = value
            self.values = values
        }
    }

    public struct ParameterReading: Codable, Equatable, Sendable {
        public var node: String
        public var param: String
        public var scope: String
        public var element: Int
        public var value: Double
        public var unit: String
        /// A value of several numbers (a mixer3d source's `position`: x, y, z); `value` is
        /// then their size (the distance). nil for every plain parameter.
        public var values: [Double]?

        public init(node: String, param: String, scope: String, element: Int, value: Double, unit: String, values: [Double]? = nil) {
            self.node = node
            self.param = param
            self.scope = scope
            self.element = element
            self.value = value
            self.unit = unit
            self.values = values
        }
    }

    public struct PropertyReading: Codable, Equatable, Sendable {
        public var node: String
        public var property: ControlProperty
        public var value: PropertyValue
        /// The node's factory presets (for `preset`).
        public var presets: [String]?

        public init(node: String, property: ControlProperty, value: PropertyValue, presets: [String]? = nil) {
            self.node = node
            self.property = property
            self.value = value
            self.presets = presets
        }
    }

    /// A property's value: seconds (latency, tail), on/off (bypass), a name or none (preset).
    public enum PropertyValue: Codable, Equatable, Sendable, CustomStringConvertible {
        case seconds(Double)
        case flag(Bool)
        case name(String?)

        public init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() { self = .name(nil) }
            else if let flag = try? container.decode(Bool.self) { self = .flag(flag) }
            else if let number = try? container.decode(Double.self) { self = .seconds(number) }
            else { self = .name(try container.decode(String.self)) }
        }

        public func encode(to encoder: Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .seconds(let seconds): try container.encode(seconds)
            case .flag(let flag): try container.encode(flag)
            case .name(let name?): try container.encode(name)
            case .name(nil): try container.encodeNil()
            }
        }

        public var description: String {
            switch self {
            case .seconds(let seconds): String(format: "%g s", seconds)
            case .flag(let flag): flag ? "true" : "false"
            case .name(let name): name ?? "none"
            }
        }
    }

    public struct MeterReading: Codable, Equatable, Sendable {
        public var node: String
        public var meter: String
        public var scope: String
        public var element: Int
        public var value: Double
        public var unit: String

        public init(node: String, meter: String, scope: String, element: Int, value: Double, unit: String) {
            self.node = node
            self.meter = meter
            self.scope = scope
            self.element = element
            self.value = value
            self.unit = unit
        }
    }

    public struct StatusReport: Codable, Equatable, Sendable {
        public var device: String
        public var cycles: Int
        public var xruns: Int
        public var loadMean: Double
        public var loadMax: Double
        public var latencyFrames: Int
        public var latencyMilliseconds: Double
        public var rateScalar: Double
        public var interruptions: Int
        public var running: Bool
        /// Recorders stopped by a write error (a full disk); empty when all is well.
        public var recorderFailures: [RecorderFailure] = []
        /// The device's name (its PCM, or the driver), as programs see it in their route.
        public var deviceName: String?

        enum CodingKeys: String, CodingKey {
            case device, cycles, xruns, interruptions, running
            case deviceName = "device_name"
            case loadMean = "load_mean", loadMax = "load_max", latencyFrames = "latency_frames"
            case latencyMilliseconds = "latency_ms", rateScalar = "rate_scalar"
            case recorderFailures = "recorder_failures"
        }
    }

    public struct VersionInfo: Codable, Equatable, Sendable {
        /// The protocol version the server speaks.
        public var `protocol`: Int
        /// Versions a request may name.
        public var supported: [Int]
        /// Sonora's release.
        public var sonora: String
        public var commands: [String]

        public static var current: VersionInfo {
            VersionInfo(protocol: ControlProtocol.version, supported: ControlProtocol.supportedVersions,
                        sonora: ControlProtocol.sonoraVersion, commands: ControlCommand.allCases.map(\.name))
        }
    }
}

// MARK: Wire form

extension ControlResponse {
    private struct Header: Codable {
        var ok: Bool
        var code: ControlFailure.Code?
        var error: String?
        var field: String?
        var diagnostics: [String]?
    }
    private struct NodesBody: Codable { var nodes: [NodeSummary] }
    private struct ParametersBody: Codable { var node: String; var params: [ParameterSummary] }
    private struct MetersBody: Codable { var meters: [MeterReading] }
    private struct StatusBody: Codable { var status: StatusReport }
    private struct SavedBody: Codable { var path: String }
    private struct MetricsBody: Codable { var metrics: String }

    /// One JSON line (with its newline). Non-finite numbers (a meter at -inf dB) are
    /// written as the strings "inf", "-inf", "nan" since JSON has no such numbers.
    public func line() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        do {
            return Array(try encoder.encode(Wire(self))) + [10]
        } catch {
            let failure = ControlFailure(.failed, "cannot encode the answer: \(error)")
            return Array((try? encoder.encode(Wire(.failure(failure)))) ?? Data(#"{"ok":false,"code":"failed"}"#.utf8)) + [10]
        }
    }

    /// Decodes an answer to `command` (as `sonora ctl` reads it).
    public static func decode(_ data: Data, for command: ControlCommand) throws -> ControlResponse {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        let header = try decoder.decode(Header.self, from: data)
        guard header.ok else {
            return .failure(ControlFailure(header.code ?? .failed, field: header.field, header.error ?? "request failed", diagnostics: header.diagnostics))
        }
        switch command {
        case .nodes: return .nodes(try decoder.decode(NodesBody.self, from: data).nodes)
        case .params:
            let body = try decoder.decode(ParametersBody.self, from: data)
            return .parameters(node: body.node, body.params)
        case .get, .set: return .parameter(try decoder.decode(ParameterReading.self, from: data))
        case .getProperty, .setProperty: return .property(try decoder.decode(PropertyReading.self, from: data))
        case .meters: return .meters(try decoder.decode(MetersBody.self, from: data).meters)
        case .status, .device: return .status(try decoder.decode(StatusBody.self, from: data).status)
        case .reload: return .reloaded
        case .save: return .saved(path: try decoder.decode(SavedBody.self, from: data).path)
        case .version: return .version(try decoder.decode(VersionInfo.self, from: data))
        case .metrics: return .metrics(try decoder.decode(MetricsBody.self, from: data).metrics)
        case .transport: return .transport(try decoder.decode(TransportReading.self, from: data))
        case .patch: return .patch(try decoder.decode(PatchReading.self, from: data))
        }
    }

    /// `"ok"` beside the payload's own keys, in one object.
    private struct Wire: Encodable {
        let response: ControlResponse
        init(_ response: ControlResponse) { self.response = response }

        func encode(to encoder: Encoder) throws {
            switch response {
            case .failure(let failure):
                try Header(ok: false, code: failure.code, error: failure.message, field: failure.field, diagnostics: failure.diagnostics).encode(to: encoder)
                return
            default:
                try Header(ok: true).encode(to: encoder)
            }
            switch response {
            case .nodes(let nodes): try NodesBody(nodes: nodes).encode(to: encoder)
            case .parameters(let node, let list): try ParametersBody(node: node, params: list).encode(to: encoder)
            case .parameter(let reading): try reading.encode(to: encoder)
            case .property(let reading): try reading.encode(to: encoder)
            case .meters(let meters): try MetersBody(meters: meters).encode(to: encoder)
            case .status(let status): try StatusBody(status: status).encode(to: encoder)
            case .reloaded, .failure: break
            case .saved(let path): try SavedBody(path: path).encode(to: encoder)
            case .version(let info): try info.encode(to: encoder)
            case .metrics(let text): try MetricsBody(metrics: text).encode(to: encoder)
            case .transport(let reading): try reading.encode(to: encoder)
            case .patch(let reading): try reading.encode(to: encoder)
            }
        }
    }
}
