import Foundation
import SonoraUnits

/// A request on the control socket, typed. Decoding checks every field's JSON type and
/// range and refuses fields the command does not take, naming the field; encoding
/// writes the JSON `sonora ctl` sends.
public enum ControlRequest: Equatable, Sendable {
    case nodes
    case parameters(node: String)
    case get(ParameterSelector)
    case set(ParameterSelector, value: ControlValue, ramp: Double?)
    case getProperty(node: String, property: ControlProperty)
    case setProperty(node: String, PropertySetting)
    case meters
    case status
    case reload
    /// `overwrite`: replace an existing file (the running config, typically); without it an existing path is refused.
    case save(path: String, overwrite: Bool)
    /// Another device for the running pipeline: nil keeps that side as it is.
    case device(playback: String?, capture: String?)
    case version
    /// Every series in Prometheus' text exposition format.
    case metrics
    case transport(TransportRequest)
    case patch(PatchRequest)

    /// A parameter by node, name or ID, and (optionally) scope and element.
    public struct ParameterSelector: Equatable, Sendable {
        public var node: String
        public var parameter: ParameterName
        /// nil: the first scope that has the parameter.
        public var scope: AudioUnitScope?
        /// nil: element 0.
        public var element: Int?

        public init(node: String, parameter: ParameterName, scope: AudioUnitScope? = nil, element: Int? = nil) {
            self.node = node
            self.parameter = parameter
            self.scope = scope
            self.element = element
        }
    }

    /// A parameter's name (or identifier) or its numeric ID.
    public enum ParameterName: Equatable, Sendable {
        case id(UInt32)
        case name(String)
    }

    /// A `set-property` request's property and typed value.
    public enum PropertySetting: Equatable, Sendable {
        case bypass(Bool)
        case preset(String)
    }

    public var command: ControlCommand {
        switch self {
        case .nodes: .nodes
        case .parameters: .params
        case .get: .get
        case .set: .set
        case .getProperty: .getProperty
        case .setProperty: .setProperty
        case .meters: .meters
        case .status: .status
        case .reload: .reload
        case .save: .save
        case .device: .device
        case .version: .version
        case .metrics: .metrics
        case .transport: .transport
        case .patch: .patch
        }
    }
}

/// A value for `set`: a number in the parameter's unit, a text with a unit or a value
/// name (`"-6 dB"`, `"1.2 kHz"`, `"pink noise"`), or on/off. Numbers are finite: JSON
/// cannot carry NaN or infinity, and `init(number:)` refuses them before they reach it.
public enum ControlValue: Equatable, Sendable {
    case number(Double)
    case text(String)
    case flag(Bool)

    /// A number, or nil with why not (NaN and infinities are no parameter's value).
    public static func number(_ value: Double) -> Result<ControlValue, ControlFailure> {
        guard value.isFinite else { return .failure(ControlFailure(.badField, field: "value", "value must be a finite number, not \(value)")) }
        return .success(.number(value))
    }
}

// MARK: Decoding

extension ControlRequest: Decodable {
    /// Decodes one request line. Every problem is a `ControlFailure` naming its field.
    public static func decode(_ line: some Collection<UInt8>) -> Result<ControlRequest, ControlFailure> {
        guard line.count <= ControlProtocol.maximumRequestBytes else {
            return .failure(ControlFailure(.tooLong, "request longer than \(ControlProtocol.maximumRequestBytes) bytes"))
        }
        do {
            let request = try JSONDecoder().decode(ControlRequest.self, from: Data(line))
            // JSON decoders keep one of two equal keys silently; {"element":1,"element":0}
            // must not address either.
            if let duplicate = duplicateKey(in: Array(line)) {
                return .failure(ControlFailure(.badRequest, field: duplicate, "field '\(Diagnostic.excerpt(duplicate))' appears twice; give each field once"))
            }
            return .success(request)
        } catch let failure as ControlFailure {
            return .failure(failure)
        } catch DecodingError.typeMismatch(_, let context) where context.codingPath.isEmpty {
            return .failure(ControlFailure(.badRequest, #"a request is a JSON object such as {"cmd":"status"}"#))
        } catch {
            let text = String(decoding: line.prefix(80), as: UTF8.self)
            return .failure(ControlFailure(.malformedJSON, "malformed JSON: \(text)"))
        }
    }

    /// The first key that appears twice in the top-level object of a valid JSON line.
    static func duplicateKey(in bytes: [UInt8]) -> String? {
        var keys = Set<String>()
        var depth = 0
        var index = 0
        var expectingKey = false
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                expectingKey = depth == 1 && byte == UInt8(ascii: "{")
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
            case UInt8(ascii: ","):
                expectingKey = depth == 1
            case UInt8(ascii: "\""):
                // Find the closing quote, skipping escaped characters.
                var end = index + 1
                while end < bytes.count && bytes[end] != UInt8(ascii: "\"") { end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1 }
                if expectingKey {
                    let raw = Array(bytes[index...min(end, bytes.count - 1)])
                    let key = (try? JSONDecoder().decode(String.self, from: Data(raw))) ?? String(decoding: raw, as: UTF8.self)
                    if !keys.insert(key).inserted { return key }
                    expectingKey = false
                }
                index = end
            default:
                break
            }
            index += 1
        }
        return nil
    }

    public init(from decoder: Decoder) throws {
        let fields = try RequestFields(decoder.container(keyedBy: FieldKey.self))
        if let version = try fields.integer("version", in: 0...Int.max) {
            guard ControlProtocol.supportedVersions.contains(version) else {
                let spoken = ControlProtocol.supportedVersions.map(String.init).joined(separator: ", ")
                throw ControlFailure(.unsupportedVersion, field: "version", "protocol version \(version) is not supported; this server speaks version \(spoken)")
            }
        }
        guard let name = try fields.string("cmd") else {
            let names = ControlCommand.allCases.map(\.name).joined(separator: ", ")
            throw ControlFailure(.missingField, field: "cmd", "missing \"cmd\" (\(names))")
        }
        let command = try ControlCommand.named(name).get()
        try fields.refuseUnknown(allowed: command.allowedFields, command: command)
        for field in command.requiredFields where !fields.contains(field) {
            throw ControlFailure(.missingField, field: field, "\(command.name) needs \"\(field)\"")
        }
        switch command {
        case .nodes: self = .nodes
        case .meters: self = .meters
        case .status: self = .status
        case .reload: self = .reload
        case .version: self = .version
        case .metrics: self = .metrics
        case .params: self = .parameters(node: try fields.requiredString("node"))
        case .get: self = .get(try fields.selector())
        case .set:
            let selector = try fields.selector()
            let value = try fields.value()
            let ramp = try fields.number("ramp")
            if let ramp, !(0...60).contains(ramp) {
                throw ControlFailure(.outOfRange, field: "ramp", "ramp must be 0…60 seconds, not \(ramp)")
            }
            self = .set(selector, value: value, ramp: ramp)
        case .getProperty:
            self = .getProperty(node: try fields.requiredString("node"), property: try fields.property(settable: false))
        case .setProperty:
            let node = try fields.requiredString("node")
            switch try fields.property(settable: true) {
            case .bypass:
                guard let on = try fields.boolean("value") else { throw ControlFailure(.missingField, field: "value", "bypass needs \"value\": true or false") }
                self = .setProperty(node: node, .bypass(on))
            default:
                self = .setProperty(node: node, .preset(try fields.requiredString("value")))
            }
        case .save:
            let path = try fields.requiredString("path")
            guard !path.isEmpty else { throw ControlFailure(.badField, field: "path", "\"path\" is empty") }
            self = .save(path: path, overwrite: try fields.boolean("overwrite") ?? false)
        case .device:
            let playback = try fields.string("playback"), capture = try fields.string("capture")
            guard playback != nil || capture != nil else {
                throw ControlFailure(.missingField, field: "playback", "device needs \"playback\" or \"capture\" (a device name)")
            }
            for (field, name) in [("playback", playback), ("capture", capture)] {
                guard let name else { continue }
                if name.isEmpty { throw ControlFailure(.badField, field: field, "\"\(field)\" is empty") }
                // No device name is this long; refused before it reaches ALSA or a message.
                if name.utf8.count > 256 {
                    throw ControlFailure(.badField, field: field, "\"\(field)\" is \(name.utf8.count) bytes long; a device name is at most 256")
                }
            }
            self = .device(playback: playback, capture: capture)
        case .transport: self = .transport(try TransportRequest(fields))
        case .patch: self = .patch(try PatchRequest(fields))
        }
    }
}

// MARK: Encoding

extension ControlRequest: Encodable {
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: FieldKey.self)
        try container.encode(command.name, forKey: FieldKey("cmd"))
        func encode(_ selector: ParameterSelector) throws {
            try container.encode(selector.node, forKey: FieldKey("node"))
            switch selector.parameter {
            case .id(let id): try container.encode(id, forKey: FieldKey("param"))
            case .name(let name): try container.encode(name, forKey: FieldKey("param"))
            }
            try container.encodeIfPresent(selector.scope?.description, forKey: FieldKey("scope"))
            try container.encodeIfPresent(selector.element, forKey: FieldKey("element"))
        }
        switch self {
        case .nodes, .meters, .status, .reload, .version, .metrics: break
        case .parameters(let node): try container.encode(node, forKey: FieldKey("node"))
        case .get(let selector): try encode(selector)
        case .set(let selector, let value, let ramp):
            try encode(selector)
            switch value {
            case .number(let number): try container.encode(number, forKey: FieldKey("value"))
            case .text(let text): try container.encode(text, forKey: FieldKey("value"))
            case .flag(let flag): try container.encode(flag, forKey: FieldKey("value"))
            }
            try container.encodeIfPresent(ramp, forKey: FieldKey("ramp"))
        case .getProperty(let node, let property):
            try container.encode(node, forKey: FieldKey("node"))
            try container.encode(property.rawValue, forKey: FieldKey("property"))
        case .setProperty(let node, let setting):
            try container.encode(node, forKey: FieldKey("node"))
            switch setting {
            case .bypass(let on):
                try container.encode(ControlProperty.bypass.rawValue, forKey: FieldKey("property"))
                try container.encode(on, forKey: FieldKey("value"))
            case .preset(let name):
                try container.encode(ControlProperty.preset.rawValue, forKey: FieldKey("property"))
                try container.encode(name, forKey: FieldKey("value"))
            }
        case .save(let path, let overwrite):
            try container.encode(path, forKey: FieldKey("path"))
            if overwrite { try container.encode(true, forKey: FieldKey("overwrite")) }
        case .device(let playback, let capture):
            try container.encodeIfPresent(playback, forKey: FieldKey("playback"))
            try container.encodeIfPresent(capture, forKey: FieldKey("capture"))
        case .transport(let request): try request.encode(into: &container)
        case .patch(let request): try request.encode(into: &container)
        }
    }

    /// The request as one JSON line (with its newline), as `sonora ctl` sends it.
    public func line() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(self)) + [10]
    }
}
