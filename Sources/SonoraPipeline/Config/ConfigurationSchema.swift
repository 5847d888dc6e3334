import Foundation

/// A JSON Schema (draft 2020-12) of the pipeline config format, for editors to validate
/// against (`sonora schema`). Kept beside the parser's key lists so they agree.
public enum ConfigurationSchema {
    public static var json: String {
        let parameterEntry: [String: Any] = [
            "type": "object", "additionalProperties": false,
            "properties": [
                "name": ["type": "string", "description": "parameter name (as ParameterInfo says; case and spaces ignored)"],
                "id": ["type": "integer", "minimum": 0],
                "scope": ["enum": ["global", "input", "output"]],
                "element": ["type": "integer", "minimum": 0],
                "value": ["type": ["number", "string", "boolean"], "description": "raw, or with a unit: -6 dB, 1.2 kHz, 250 ms, 50 %, on"],
                "ramp": ["type": "number", "minimum": 0, "maximum": 60, "description": "seconds, when applied to a running pipeline"],
            ],
            "required": ["value"],
        ]
        let value: [String: Any] = ["type": ["number", "string", "boolean"]]
        let schema: [String: Any] = [
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://sonora.example/pipeline.schema.json",
            "title": "Sonora pipeline",
            "type": "object", "additionalProperties": false,
            "required": ["nodes", "connections"],
            "properties": [
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
                    ],
                ],
                "nodes": [
                    "type": "array",
                    "items": [
                        "type": "object", "additionalProperties": false, "required": ["id", "kind"],
                        "properties": [
                            "id": ["type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_.-]*$", "not": ["enum": ["input", "output"]]],
                            "kind": ["type": "string", "description": "a unit name (sonora units) or: \(PipelineBuilder.aliases.keys.sorted().joined(separator: ", "))"],
                            "parameters": [
                                "oneOf": [
                                    ["type": "object", "additionalProperties": value],
                                    ["type": "array", "items": parameterEntry],
                                ],
                            ],
                            "preset": ["type": ["string", "integer"]],
                            "file": ["type": "string"], "loop": ["type": "boolean"], "inputs": ["type": "integer", "minimum": 1, "maximum": 64],
                            "outputs": ["type": "integer"], "uri": ["type": "string"], "bypass": ["type": "boolean"],
                            "channels": ["type": "integer"], "comment": ["type": "string"],
                        ],
                    ],
                ],
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
                "control": ["type": "object", "additionalProperties": false, "properties": ["socket": ["type": "string"], "timeout": ["type": "number", "minimum": 0.1]]],
                "status": [
                    "type": "object", "additionalProperties": false,
                    "properties": [
                        "interval": ["type": "number", "minimum": 0, "maximum": 3600],
                        "meters": ["oneOf": [["type": "string"], ["type": "array", "items": ["type": "string"]]]],
                    ],
                ],
            ],
        ]
        let data = try! JSONSerialization.data(withJSONObject: schema, options: [.prettyPrinted, .sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }
}
