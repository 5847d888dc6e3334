extension ConfigurationSchema {
    /// `metrics:` as JSON Schema (the parser also refuses any host that is not loopback).
    static var metricsObject: [String: Any] {
        [
            "type": "object", "additionalProperties": false, "required": ["listen"],
            "properties": [
                "listen": [
                    "type": "string",
                    "description": "HOST:PORT of the /metrics HTTP endpoint, loopback only (127.0.0.1:9464, localhost:9464, [::1]:9464); no section, no listener",
                ],
            ],
        ]
    }
}
