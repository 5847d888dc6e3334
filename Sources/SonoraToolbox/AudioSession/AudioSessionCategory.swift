/// What a program's audio is for (the reference documents' six categories, Table 7-1's
/// "setting categories"). The raw value is the name the appliance's session policy and its
/// wire protocol use (`session_activate {category}`).
public enum AudioSessionCategory: String, Sendable, CaseIterable, Codable {
    /// Sound that goes with other audio (a game's effects): mixes, is silenced by nothing of
    /// its own, never interrupts anyone.
    case ambient
    /// The default: as ambient, but other audio is silenced while it is active.
    case soloAmbient
    /// Playback that is the point of the program (a media player).
    case playback
    /// Recording only.
    case record
    /// Recording and playback at once (an intercom call).
    case playAndRecord
    /// Processing without playing or recording (an offline render, a converter).
    case audioProcessing

    /// Whether sessions of this category capture.
    public var usesInput: Bool { self == .record || self == .playAndRecord }
    /// Whether sessions of this category play.
    public var usesOutput: Bool { self != .record && self != .audioProcessing }
}

/// How a category is fine-tuned ("Fine-Tuning the Category"): the overrides.
public struct AudioSessionCategoryOptions: OptionSet, Sendable, Hashable, Codable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// Other sessions keep playing beside this one (it interrupts no one).
    public static let mixWithOthers = AudioSessionCategoryOptions(rawValue: 1 << 0)
    /// Other sessions are lowered while this one is active (a chime over music).
    public static let duckOthers = AudioSessionCategoryOptions(rawValue: 1 << 1)
    /// playAndRecord plays through the speaker rather than the receiver/headset.
    public static let defaultToSpeaker = AudioSessionCategoryOptions(rawValue: 1 << 3)

    /// The options' names as the policy and wire protocol spell them, in a fixed order.
    public var names: [String] {
        var names: [String] = []
        if contains(.mixWithOthers) { names.append("mixWithOthers") }
        if contains(.duckOthers) { names.append("duckOthers") }
        if contains(.defaultToSpeaker) { names.append("defaultToSpeaker") }
        return names
    }

    /// The options named (the inverse of `names`); nil if a name is unknown.
    public init?(names: [String]) {
        var options: AudioSessionCategoryOptions = []
        for name in names {
            switch name {
            case "mixWithOthers": options.insert(.mixWithOthers)
            case "duckOthers": options.insert(.duckOthers)
            case "defaultToSpeaker": options.insert(.defaultToSpeaker)
            default: return nil
            }
        }
        self = options
    }
}

/// How `setActive(false)` leaves: tell the sessions this one interrupted that they may resume.
public struct AudioSessionSetActiveOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// kAudioSessionSetActiveFlag_NotifyOthersOnDeactivation.
    public static let notifyOthersOnDeactivation = AudioSessionSetActiveOptions(rawValue: 1)
}
