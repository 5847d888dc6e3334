extension ConfigurationSchema {
    static var transportObject: [String: Any] {
        [
            "type": "object", "additionalProperties": false,
            "description": "the graph transport at start (LV2 plugins get it as time:Position; `sonora ctl transport` changes it)",
            "properties": [
                "tempo": [
                    "type": "number", "minimum": PipelineConfiguration.TransportSettings.tempoRange.lowerBound,
                    "maximum": PipelineConfiguration.TransportSettings.tempoRange.upperBound, "default": 120,
                    "description": "beats per minute",
                ],
                "meter": [
                    "type": "string", "pattern": "^\\s*[0-9]+\\s*/\\s*(1|2|4|8|16|32)\\s*$", "default": "4/4",
                    "description": "beats per bar / beat unit, e.g. \"3/4\" or \"6/8\"",
                ],
                "playing": ["type": "boolean", "default": false],
            ],
        ]
    }
}
