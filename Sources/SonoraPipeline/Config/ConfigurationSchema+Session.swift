import Foundation

extension ConfigurationSchema {
    /// `session:` as JSON Schema: the same keys, types and ranges the parser takes.
    static var sessionObject: [String: Any] {
        let roleNames: [String: Any] = [
            "oneOf": [["type": "string"], ["type": "array", "items": ["type": "string"], "uniqueItems": true]],
            "description": "role name(s) defined in session.roles",
        ]
        let role: [String: Any] = [
            "type": "object", "additionalProperties": false, "required": ["name", "priority"],
            "properties": [
                "name": ["type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_.-]*$", "maxLength": ConfigurationParser.maximumIDLength],
                "priority": ["type": "integer", "minimum": SessionRole.priorityRange.lowerBound, "maximum": SessionRole.priorityRange.upperBound, "description": "higher wins"],
                "interrupts": roleNames.merging(["description": "roles of lower priority whose sessions this one interrupts (faded out, told)"]) { _, new in new },
                "ducks": roleNames.merging(["description": "roles whose sessions this one lowers by duck_db while active"]) { _, new in new },
                "duck_db": ["type": "number", "exclusiveMaximum": 0, "minimum": SessionRole.duckRange.lowerBound, "default": SessionRole.defaultDuckDB],
                "attack_ms": ["type": "integer", "minimum": SessionRole.rampRange.lowerBound, "maximum": SessionRole.rampRange.upperBound, "default": SessionRole.defaultAttackMilliseconds],
                "release_ms": ["type": "integer", "minimum": SessionRole.rampRange.lowerBound, "maximum": SessionRole.rampRange.upperBound, "default": SessionRole.defaultReleaseMilliseconds],
                "may_record": ["type": "boolean", "default": true],
            ],
        ]
        var categories: [String: Any] = [:]
        for name in SessionCategory.names { categories[name] = ["type": "string", "description": "the role of a \(name) session that names none"] }
        return [
            "type": "object", "additionalProperties": false,
            "description": "the session server: other programs attach on a socket; this policy decides who interrupts and ducks whom",
            "properties": [
                "socket": ["type": "string", "minLength": 1, "maxLength": ControlSocketPath.maximumBytes - 1, "description": "relative to the config's folder; default $XDG_RUNTIME_DIR/sonora/server.sock, /run/sonora/server.sock for root, else /tmp/sonora-UID/server.sock"],
                "group": ["type": "string", "minLength": 1, "description": "a group that may attach too (socket 0660)"],
                "max_clients": ["type": "integer", "minimum": PipelineConfiguration.Session.maxClientsRange.lowerBound, "maximum": PipelineConfiguration.Session.maxClientsRange.upperBound, "default": PipelineConfiguration.Session.defaultMaxClients],
                "fade_ms": ["type": "integer", "minimum": SessionPolicy.fadeRange.lowerBound, "maximum": SessionPolicy.fadeRange.upperBound, "default": SessionPolicy.defaultFadeMilliseconds],
                "roles": ["type": "array", "items": role],
                "categories": ["type": "object", "additionalProperties": false, "properties": categories],
            ],
        ]
    }
}
