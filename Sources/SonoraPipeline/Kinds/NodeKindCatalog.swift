import SonoraUnits
import SonoraVoice

/// The node kinds a config may use: the ones with options of their own, then every
/// registered unit that is not an I/O unit, with the short names configs use.
public struct NodeKindCatalog: Sendable {
    public let kinds: [NodeKind]

    public static let standard: NodeKindCatalog = {
        let registry = AudioComponentRegistry.shared
        let special: [NodeKind] = [.player, .recorder, .mixer, .mixer3d, .meter, .lv2, .clients, .splitter, .merger, .channelMap]
        let shortNames = [
            "ToneGenerator": ["tone"], "GraphicEQ": ["eq"], "ParametricEQ": ["peq"], "SampleDelay": ["delay"],
            "VoiceProcessor": ["voice"],
        ]
        let taken = Set(special.flatMap(\.names).map { $0.lowercased() })
        // The capture source and the head of the graph are made by the pipeline itself.
        let units = registry.components
            .filter { $0.description.type != .outputUnit && !taken.contains($0.name.lowercased()) }
            .map { NodeKind.unit($0, aliases: shortNames[$0.name] ?? []) }
        return NodeKindCatalog(kinds: special + units)
    }()

    /// The kind `name` names (its name or an alias, case-insensitive).
    public func kind(named name: String) -> NodeKind? {
        let lower = name.lowercased()
        return kinds.first { $0.names.contains { $0.lowercased() == lower } }
    }

    /// Every name a config may write as `kind`.
    public var names: [String] { kinds.flatMap(\.names) }
}
