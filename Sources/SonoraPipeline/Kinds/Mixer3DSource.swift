import SonoraUnits

/// One source of a mixer3d node as its config gives it: the input element it is (its
/// place in `sources`), a name for the control socket, where it is, its gain and how it
/// is spatialized.
public struct Mixer3DSource: Hashable, Sendable {
    /// How a source is rendered (the 3D mixer's spatialization algorithms).
    public enum Algorithm: String, CaseIterable, Sendable {
        case equalPower = "equal-power"
        case sphericalHead = "spherical-head"
        case hrtf
        case vbap
        /// A stereo input played as it is, not placed.
        case passThrough = "pass-through"

        /// The 3D mixer's value for it.
        var unitValue: Mixer3DUnit.SpatializationAlgorithm {
            switch self {
            case .equalPower: .equalPowerPanning
            case .sphericalHead: .sphericalHead
            case .hrtf: .hrtf
            case .vbap: .vectorBasedPanning
            case .passThrough: .stereoPassThrough
            }
        }

    }

    public var name: String
    public var position: Mixer3DPosition
    /// dB, the unit's input gain.
    public var gain: Double
    /// nil: the output layout's default.
    public var algorithm: Algorithm?

    /// The fields of a `sources` item.
    static let fields: [NodeOption] = [
        NodeOption("name", .name, "the source's name on the control socket (`NODE.NAME`); default `sourceN`, N its place in the list from 0"),
        NodeOption("position", .point, required: true, "[x, y, z] in metres: the listener at the origin facing -z, +x right, +y up (OpenAL's convention)"),
        NodeOption("gain", .number(-120...20, unit: "dB"), "dB (default 0)"),
        NodeOption("algorithm", .choice(Algorithm.allCases.map(\.rawValue)), "equal-power, spherical-head, hrtf, vbap or pass-through (default: the output's)"),
    ]

    /// The sources a `sources` option holds, in input order (it was type-checked by the parser).
    static func sources(_ items: [[String: LocatedOption]]) -> [Mixer3DSource] {
        items.enumerated().map { index, item in
            Mixer3DSource(
                name: item["name"]?.value.text ?? "source\(index)",
                position: item["position"]?.value.point.map { Mixer3DPosition(x: $0.x, y: $0.y, z: $0.z) } ?? Mixer3DPosition(x: 0, y: 0, z: 0),
                gain: item["gain"]?.value.number ?? 0,
                algorithm: item["algorithm"]?.value.text.flatMap(Algorithm.init(rawValue:)))
        }
    }
}

/// What a mixer3d node renders to.
public enum Mixer3DLayout: String, CaseIterable, Sendable {
    case stereo
    /// Two ears: HRTF by default.
    case binaural
    /// 4.0: L R Ls Rs.
    case quad
    /// L R C LFE Ls Rs.
    case surround51 = "5.1"

    public var channels: Int {
        switch self {
        case .stereo, .binaural: 2
        case .quad: 4
        case .surround51: 6
        }
    }

    /// The algorithm a source gets unless it names one.
    public var defaultAlgorithm: Mixer3DSource.Algorithm {
        switch self {
        case .stereo: .equalPower
        case .binaural: .hrtf
        case .quad, .surround51: .vbap
        }
    }
}
