import Foundation

/// A JSON Schema (draft 2020-12) of the pipeline config format, for editors to validate
/// against (`sonora schema`). Node items are derived from the node kinds' descriptions:
/// one alternative per kind, each with exactly the options that kind takes.
public enum ConfigurationSchema {
    public static var json: String {
        let data = try! JSONSerialization.data(withJSONObject: object(), options: [.prettyPrinted, .sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }

    static func object(catalog: NodeKindCatalog = .standard) -> [String: Any] {
        let parameterEntry: [String: Any] = [
            "type": "object", "additionalProperties": false,
            "properties": [
                "name": ["type": "string", "description": "parameter name (as ParameterInfo says; case and spaces ignored)"],
                "id": ["type": "integer", "minimum": 0],
                "scope": ["enum": ["global", "input", "output"]],
                "element": ["type": "integer", "minimum": 0, "maximum": 1023],
                "value": ["type": ["number", "string", "boolean"], "description": "raw, or with a unit: -6 dB, 1.2 kHz, 250 ms, 50 %, on"],
                "ramp": ["type": "number", "minimum": 0, "maximum": 60, "description": "seconds, when applied to a running pipeline"],
            ],
            "required": ["value"],
        ]
        let value: [String: Any] = ["type": ["number", "string", "boolean"]]
        let common: [String: Any] = [
            "id": ["type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_.-]*$", "maxLength": ConfigurationParser.maximumIDLength, "not": ["enum": ["input", "output"]]],
            "parameters": [
                "oneOf": [
                    ["type": "object", "additionalProperties": value],
                    ["type": "array", "items": parameterEntry],
                ],
            ],
            "preset": ["type": ["string", "integer"], "description": "a factory preset's name or number"],
            "bypass": ["type": "boolean"],
            "channels": channelsSchema,
            "comment": ["type": "string"],
        ]
        let nodeAlternatives: [[String: Any]] = catalog.kinds.map { kind in
            var properties = common
            // JSON Schema's enum is case-sensitive; configs may write any case of these names.
            properties["kind"] = ["enum": kind.names, "description": kind.summary]
            for option in kind.options { properties[option.key] = optionSchema(option) }
            return [
                "type": "object", "additionalProperties": false, "title": kind.name,
                "required": ["id", "kind"] + kind.options.filter(\.isRequired).map(\.key),
                "properties": properties,
            ]
        }
        return [
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://sonora.example/pipeline.schema.json",
            "title": "Sonora pipeline (config format version \(PipelineConfiguration.formatVersion))",
            "type": "object", "additionalProperties": false,
            "required": ["nodes", "connections"],
            "properties": [
                "version": ["const": PipelineConfiguration.formatVersion, "description": "the config format's version (optional)"],
                "engine": [
                    "type": "object", "additionalProperties": false,
                    "properties": [
                        "sample_rate": ["type": "integer", "minimum": 8000, "maximum": 384000, "default": 48000],
                        "period": ["type": "integer", "minimum": 16, "maximum": 8192, "default": 256],
                        "periods": ["type": "integer", "minimum": 2, "maximum": 16, "default": 2],
                        "channels": ["type": "integer", "minimum": 1, "maximum": 32, "default": 2],
                    ],
                ],
                "device": [
                    "type": "object", "additionalProperties": false,
                    "properties": [
                        "playback": ["type": ["string", "null"], "description": "ALSA PCM name, null (Sonora's timer-paced device) or none"],
                        "capture": ["type": ["string", "null"], "description": "ALSA PCM name, or none"],
                        "fallback": ["enum": [NSNull(), "null", "none"], "description": "null: run on the null device when the ALSA device cannot be opened"],
                        "priority": ["type": "integer", "minimum": 1, "maximum": 99],
                        "input": ["type": "string", "description": "offline: the file `input` plays"],
                        "output": ["type": "string", "description": "offline: the file `output` writes"],
                        "voice_processing": ["type": ["boolean", "string"], "description": "on: the voice-processing I/O unit (echo canceller) sits between the graph and the device; node `voice` on the control socket"],
                        "wake_up": ["enum": ["poll", "timer"], "default": "poll", "description": "poll: wait for the device's interrupt; timer: wake on a timer predicted from the device's pointer (ALSA)"],
                        "headroom_us": ["type": "integer", "minimum": 0, "maximum": 20000, "default": 150, "description": "with wake_up: timer, how long before the predicted period the thread wakes (µs)"],
                    ],
                ],
                "nodes": ["type": "array", "items": ["oneOf": nodeAlternatives]],
                "connections": [
                    "type": "array",
                    "items": [
                        "type": "object", "additionalProperties": false, "required": ["from", "to"],
                        "properties": [
                            "from": ["type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_.-]*(:[0-9]+)?$", "description": "node[:bus], or input"],
                            "to": ["type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_.-]*(:[0-9]+)?$", "description": "node[:input], or output"],
                        ],
                    ],
                ],
                "control": [
                    "type": "object", "additionalProperties": false,
                    "properties": [
                        "socket": ["type": "string", "maxLength": ControlSocketPath.maximumBytes - 1, "description": "relative to the config's folder"],
                        "timeout": ["type": "number", "minimum": 0.1, "maximum": 3600],
                    ],
                ],
                "status": [
                    "type": "object", "additionalProperties": false,
                    "properties": [
                        "interval": ["type": "number", "minimum": 0, "maximum": 3600],
                        "meters": ["oneOf": [["type": "string"], ["type": "array", "items": ["type": "string"]]]],
                    ],
                ],
                "session": sessionObject,
                "metrics": metricsObject,
                "transport": transportObject,
            ],
        ]
    }

    static func optionSchema(_ option: NodeOption) -> [String: Any] {
        var schema: [String: Any] = ["description": option.documentation]
        switch option.type {
        case .boolean: schema["type"] = "boolean"
        case .integer(let range): schema.merge(["type": "integer", "minimum": range.lowerBound, "maximum": range.upperBound]) { a, _ in a }
        case .uri: schema.merge(["type": "string", "format": "uri"]) { a, _ in a }
        case .inputFile, .outputFile: schema.merge(["type": "string", "minLength": 1]) { a, _ in a }
        case .number(let range, let unit):
            let number: [String: Any] = ["type": "number", "minimum": range.lowerBound, "maximum": range.upperBound]
            // With a unit, `-6 dB` is a string as YAML reads it.
            if let unit { schema["oneOf"] = [number, ["type": "string", "pattern": "^\\s*[-+0-9.eE]+\\s*(\(unit))?\\s*$"]] } else { schema.merge(number) { a, _ in a } }
        case .choice(let words): schema["enum"] = words
        case .name: schema.merge(["type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_-]*$", "maxLength": ConfigurationParser.maximumIDLength]) { a, _ in a }
        case .integers(let range): schema.merge(["type": "array", "minItems": 1, "items": ["type": "integer", "minimum": range.lowerBound, "maximum": range.upperBound]]) { a, _ in a }
        case .point: schema.merge(["type": "array", "items": ["type": "number"], "minItems": 3, "maxItems": 3]) { a, _ in a }
        case .list(let fields):
            var properties: [String: Any] = [:]
            for field in fields { properties[field.key] = optionSchema(field) }
            schema.merge([
                "type": "array", "minItems": 1,
                "items": ["type": "object", "additionalProperties": false, "properties": properties, "required": fields.filter(\.isRequired).map(\.key)],
            ]) { a, _ in a }
        }
        return schema
    }
}
