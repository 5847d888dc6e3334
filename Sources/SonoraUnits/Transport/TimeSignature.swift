import SonoraCore

/// A meter: beats per bar over the note value of one beat ("3/4", "6/8").
public struct TimeSignature: BitwiseCopyable, Hashable, Sendable, CustomStringConvertible {
    public var beatsPerBar: Int32
    public var beatUnit: Int32

    public static let common = TimeSignature(uncheckedBeatsPerBar: 4, beatUnit: 4)

    /// Beats per bar 1…64; a beat unit of 1, 2, 4, 8, 16 or 32.
    public init(beatsPerBar: Int, beatUnit: Int) throws(AudioError) {
        guard (1...64).contains(beatsPerBar) else {
            throw AudioError(.invalidPropertyValue, "a time signature has 1…64 beats per bar, not \(beatsPerBar)")
        }
        guard [1, 2, 4, 8, 16, 32].contains(beatUnit) else {
            throw AudioError(.invalidPropertyValue, "a time signature's beat unit is 1, 2, 4, 8, 16 or 32, not \(beatUnit)")
        }
        self.init(uncheckedBeatsPerBar: Int32(beatsPerBar), beatUnit: Int32(beatUnit))
    }

    init(uncheckedBeatsPerBar beatsPerBar: Int32, beatUnit: Int32) {
        self.beatsPerBar = beatsPerBar
        self.beatUnit = beatUnit
    }

    /// Parses "3/4".
    public init(parsing text: String) throws(AudioError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: " ") }
        guard parts.count == 2, let beats = Int(parts[0]), let unit = Int(parts[1]) else {
            throw AudioError(.invalidPropertyValue, "'\(text.prefix(32))' is not a time signature like \"3/4\"")
        }
        try self.init(beatsPerBar: beats, beatUnit: unit)
    }

    public var description: String { "\(beatsPerBar)/\(beatUnit)" }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in character: Character) -> String {
        String(drop { $0 == character }.reversed().drop { $0 == character }.reversed())
    }
}
