import SonoraCore
import SonoraUnits

/// A `transport` request: read the transport, or change it at the next cycle boundary or at
/// an exact graph sample time (`at`, frames; `status` tells the current one as `sample_time`).
public struct TransportRequest: Equatable, Sendable {
    public enum Action: String, CaseIterable, Sendable {
        case status, play, stop, locate, tempo, meter

        /// The field the action takes its value from.
        var valueField: String? {
            switch self {
            case .status, .play, .stop: nil
            case .locate: "beat"
            case .tempo: "tempo"
            case .meter: "meter"
            }
        }
    }

    public var action: Action
    public var beat: Double?
    public var tempo: Double?
    public var meter: String?
    /// Graph sample time the change is due at (nil: the next cycle boundary).
    public var at: Int64?

    public init(_ action: Action, beat: Double? = nil, tempo: Double? = nil, meter: String? = nil, at: Int64? = nil) {
        self.action = action
        self.beat = beat
        self.tempo = tempo
        self.meter = meter
        self.at = at
    }

    static let fields = ["action", "beat", "tempo", "meter", "at"]

    init(_ fields: RequestFields) throws {
        let names = Action.allCases.map(\.rawValue)
        let actionName = try fields.string("action") ?? "status"
        guard let action = Action(rawValue: actionName) else {
            throw ControlFailure(
                .badField, field: "action",
                "unknown transport action '\(Diagnostic.excerpt(actionName))'\(suggestion(for: String(actionName.prefix(64)), in: names)) (actions: \(names.joined(separator: ", ")))")
        }
        self.action = action
        for field in ["beat", "tempo", "meter"] where fields.contains(field) && action.valueField != field {
            throw ControlFailure(.badField, field: field, "\"\(field)\" goes with the \(field == "beat" ? "locate" : field) action, not \(action.rawValue)")
        }
        if let field = action.valueField, !fields.contains(field) {
            throw ControlFailure(.missingField, field: field, "transport \(action.rawValue) needs \"\(field)\"")
        }
        beat = try fields.number("beat")
        tempo = try fields.number("tempo")
        meter = try fields.string("meter")
        if let beat, beat < 0 { throw ControlFailure(.outOfRange, field: "beat", "beat must be 0 or more, not \(beat)") }
        if let tempo, !PipelineTransportLimits.tempo.contains(tempo) {
            throw ControlFailure(.outOfRange, field: "tempo", "tempo must be 1…999 BPM, not \(tempo)")
        }
        if let meter {
            do throws(AudioError) { _ = try TimeSignature(parsing: meter) } catch {
                throw ControlFailure(.badField, field: "meter", error.message)
            }
        }
        if fields.contains("at") {
            guard action != .status else { throw ControlFailure(.badField, field: "at", "\"at\" goes with a change, not status") }
            at = Int64(try fields.integer("at", in: 0...Int.max) ?? 0)
        }
    }

    func encode(into container: inout KeyedEncodingContainer<FieldKey>) throws {
        if action != .status { try container.encode(action.rawValue, forKey: FieldKey("action")) }
        try container.encodeIfPresent(beat, forKey: FieldKey("beat"))
        try container.encodeIfPresent(tempo, forKey: FieldKey("tempo"))
        try container.encodeIfPresent(meter, forKey: FieldKey("meter"))
        try container.encodeIfPresent(at, forKey: FieldKey("at"))
    }
}

enum PipelineTransportLimits {
    static let tempo = PipelineConfiguration.TransportSettings.tempoRange
}
