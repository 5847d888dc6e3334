import SonoraUnits

/// A value of a node's source — one of its input elements, addressed on the control socket
/// as `NODE.SOURCE` (`scene.bell`, or `scene.source2` by index) — that stands for several
/// of the unit's parameters at once: a mixer3d source's `position` is its azimuth,
/// elevation and distance.
public struct SourceParameter: Sendable {
    public let name: String
    /// The values' unit symbol (`m`).
    public let unit: String
    /// What a value looks like, for errors and help (`x,y,z in metres, such as 1,0,-2`).
    public let form: String
    /// The values now, of input element `element`.
    let read: @Sendable (_ unit: AudioUnit, _ element: Int) throws -> [Double]
    /// Reads `text` and sets it on input element `element`, gliding over `rampFrames`
    /// when more than 0. Throws `ValueProblem` for a value that cannot be, before
    /// changing anything.
    let write: @Sendable (_ unit: AudioUnit, _ element: Int, _ text: String, _ rampFrames: Int) throws -> Void

    public init(
        name: String, unit: String, form: String,
        read: @escaping @Sendable (AudioUnit, Int) throws -> [Double],
        write: @escaping @Sendable (AudioUnit, Int, String, Int) throws -> Void
    ) {
        self.name = name
        self.unit = unit
        self.form = form
        self.read = read
        self.write = write
    }
}
