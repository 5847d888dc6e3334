import Foundation

/// Where a mixer3d source is, in metres from the listener, in OpenAL's frame: the
/// listener at the origin facing −z, +x to the right, +y up. The 3D mixer unit takes
/// directions instead — azimuth (degrees, 0 ahead, +90 right, ±180 behind), elevation
/// (degrees, +90 above) and distance (metres) — so a position converts to and from those.
public struct Mixer3DPosition: Hashable, Sendable, CustomStringConvertible {
    public var x: Double
    public var y: Double
    public var z: Double

    /// The farthest the 3D mixer places a source (its distance parameter's maximum).
    public static let maximumDistance = 10_000.0

    public init(x: Double, y: Double, z: Double) {
        self.x = x
        self.y = y
        self.z = z
    }

    /// The point at `distance` metres towards (`azimuth`, `elevation`) degrees.
    public init(azimuth: Double, elevation: Double, distance: Double) {
        let a = azimuth * .pi / 180, e = elevation * .pi / 180
        x = distance * cos(e) * sin(a)
        y = distance * sin(e)
        z = -distance * cos(e) * cos(a)
    }

    public var distance: Double { (x * x + y * y + z * z).squareRoot() }

    /// Degrees clockwise from straight ahead seen from above: atan2(x, −z). 0 at the
    /// listener and straight above or below (no direction there to speak of).
    public var azimuth: Double {
        x == 0 && z == 0 ? 0 : atan2(x, -z) * 180 / .pi
    }

    /// Degrees above the horizontal plane; 0 at the listener.
    public var elevation: Double {
        distance == 0 ? 0 : atan2(y, (x * x + z * z).squareRoot()) * 180 / .pi
    }

    public var description: String { "\(Self.format(x)),\(Self.format(y)),\(Self.format(z))" }

    /// Coordinates to 1 µm: what a round trip through degrees leaves of `1` is `1`.
    static func format(_ value: Double) -> String {
        let rounded = (value * 1e6).rounded() / 1e6
        return OptionValue.format(rounded == 0 ? 0 : rounded)
    }

    /// Reads `x,y,z` as the control socket and `sonora ctl` write it (`1,0,-2`; spaces and
    /// one pair of brackets allowed: `[1, 0, -2]`, `1 0 -2`), checking that it is three
    /// finite numbers no farther than the 3D mixer places a source.
    public static func parse(_ text: String) -> Result<Mixer3DPosition, ValueProblem> {
        var body = text.trimmingCharacters(in: .whitespaces)
        if body.hasPrefix("[") && body.hasSuffix("]") { body = String(body.dropFirst().dropLast()) }
        let parts = body.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).map(String.init)
        let form = "a position is x,y,z in metres (listener at 0,0,0 facing -z; +x right, +y up), such as 1,0,-2"
        guard parts.count == 3 else {
            return .failure(ValueProblem("'\(Diagnostic.excerpt(text))' has \(parts.count) number\(parts.count == 1 ? "" : "s"); \(form)"))
        }
        var values: [Double] = []
        for part in parts {
            guard let value = Double(part), value.isFinite else {
                return .failure(ValueProblem("'\(Diagnostic.excerpt(part))' in '\(Diagnostic.excerpt(text))' is not a finite number; \(form)"))
            }
            values.append(value)
        }
        let position = Mixer3DPosition(x: values[0], y: values[1], z: values[2])
        if let problem = position.rangeProblem { return .failure(problem) }
        return .success(position)
    }

    /// Why the 3D mixer cannot place a source here, if it cannot.
    var rangeProblem: ValueProblem? {
        guard distance <= Self.maximumDistance else {
            return ValueProblem("position \(self) is out of range: \(OptionValue.format(distance.rounded())) m away; the 3D mixer places sources up to \(OptionValue.format(Self.maximumDistance)) m")
        }
        return nil
    }
}
