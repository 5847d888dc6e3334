/// What the appliance tells a client without being asked (a line with `"event"` and no
/// `"id"`), and `disconnected`, which the client's connection posts itself when the
/// server goes away.
public enum ApplianceEvent: Sendable, Equatable {
    case interruptionBegan
    case interruptionEnded(shouldResume: Bool)
    case duck(gainDB: Double, active: Bool)
    case routeChange(reason: String, outputs: [String], inputs: [String])
    case streamRemoved(stream: Int, reason: String)
    /// The appliance activated the program's session for it (the program opened a stream
    /// without activating it, as starting a queue does on iPhone OS), in `category`.
    case sessionActivated(category: String)
    case disconnected

    /// The event's wire fields (nil for `disconnected`, which never travels).
    var fields: [String: ApplianceValue]? {
        switch self {
        case .interruptionBegan: ["event": "interruption", "state": "began", "should_resume": false]
        case .interruptionEnded(let resume): ["event": "interruption", "state": "ended", "should_resume": .bool(resume)]
        case .duck(let gain, let active): ["event": "duck", "gain_db": .double(gain), "active": .bool(active)]
        case .routeChange(let reason, let outputs, let inputs):
            ["event": "route_change", "reason": .string(reason), "outputs": .array(outputs.map { .string($0) }), "inputs": .array(inputs.map { .string($0) })]
        case .streamRemoved(let stream, let reason): ["event": "stream_removed", "stream": .int(stream), "reason": .string(reason)]
        case .sessionActivated(let category): ["event": "session_activated", "category": .string(category)]
        case .disconnected: nil
        }
    }

    /// Reads an event line's fields; nil for an event this client does not know (a newer
    /// server may send more).
    init?(fields: [String: ApplianceValue]) {
        switch fields["event"]?.stringValue {
        case "interruption":
            switch fields["state"]?.stringValue {
            case "began": self = .interruptionBegan
            case "ended": self = .interruptionEnded(shouldResume: fields["should_resume"]?.boolValue ?? false)
            default: return nil
            }
        case "duck":
            guard let gain = fields["gain_db"]?.doubleValue else { return nil }
            self = .duck(gainDB: gain, active: fields["active"]?.boolValue ?? true)
        case "route_change":
            self = .routeChange(
                reason: fields["reason"]?.stringValue ?? "",
                outputs: fields["outputs"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                inputs: fields["inputs"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        case "stream_removed":
            guard let stream = fields["stream"]?.intValue else { return nil }
            self = .streamRemoved(stream: stream, reason: fields["reason"]?.stringValue ?? "")
        case "session_activated":
            guard let category = fields["category"]?.stringValue else { return nil }
            self = .sessionActivated(category: category)
        default:
            return nil
        }
    }
}
