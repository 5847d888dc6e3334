/// The category options of a session (AVAudioSession's category options): mix with other
/// sessions, duck them, route to the speaker.
public struct SessionOptions: OptionSet, Codable, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Play beside other sessions instead of interrupting them.
    public static let mixWithOthers = SessionOptions(rawValue: 1 << 0)
    /// Lower every other session of no higher priority while active (implies `mixWithOthers`).
    public static let duckOthers = SessionOptions(rawValue: 1 << 1)
    /// Output to the speaker rather than the receiver (playAndRecord).
    public static let defaultToSpeaker = SessionOptions(rawValue: 1 << 2)

    /// Each option with its wire and config name, in a fixed order.
    public static let named: [(name: String, option: SessionOptions)] = [
        ("mixWithOthers", .mixWithOthers), ("duckOthers", .duckOthers), ("defaultToSpeaker", .defaultToSpeaker),
    ]

    /// The options' names, in `named` order.
    public var names: [String] { Self.named.filter { contains($0.option) }.map(\.name) }

    /// The options named, or the first name that is none of them.
    public static func parse(_ names: [String]) -> Result<SessionOptions, UnknownName> {
        var options: SessionOptions = []
        for name in names {
            guard let known = named.first(where: { $0.name == name }) else { return .failure(UnknownName(name: name)) }
            options.insert(known.option)
        }
        return .success(options)
    }

    public struct UnknownName: Error, Equatable, Sendable { public var name: String }
}
