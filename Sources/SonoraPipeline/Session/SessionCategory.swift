/// An audio session's category, as the reference documents name them (Table 7-1): what the
/// session's audio is for, which decides whether it mixes with others and uses the input.
public enum SessionCategory: String, CaseIterable, Codable, Sendable, Hashable {
    /// Mixes with everyone; output only (sounds a user hears beside other audio).
    case ambient
    /// The default: output only, not mixable.
    case soloAmbient
    /// Output that matters (media); not mixable unless `mixWithOthers`.
    case playback
    /// Input only; not mixable.
    case record
    /// Input and output (calls, intercom); not mixable unless `mixWithOthers`.
    case playAndRecord
    /// Offline processing: neither input nor output, so it never competes.
    case audioProcessing

    /// The category names, in the documents' order (for messages and the schema).
    public static var names: [String] { allCases.map(\.rawValue) }

    /// Whether a session of this category takes the input.
    public var usesInput: Bool { self == .record || self == .playAndRecord }

    /// Whether this category mixes with others whatever its options say.
    public var alwaysMixes: Bool { self == .ambient || self == .audioProcessing }

    /// Options the category accepts, as AVAudioSession does: mixing and ducking only for
    /// playback and playAndRecord (ambient mixes already), the speaker only for playAndRecord.
    public var allowedOptions: SessionOptions {
        switch self {
        case .playback: [.mixWithOthers, .duckOthers]
        case .playAndRecord: [.mixWithOthers, .duckOthers, .defaultToSpeaker]
        case .ambient, .soloAmbient, .record, .audioProcessing: []
        }
    }
}
