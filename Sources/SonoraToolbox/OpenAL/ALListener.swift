/// The context's listener (AL_POSITION, AL_VELOCITY, AL_ORIENTATION, AL_GAIN of alListener).
/// Setters with an invalid value (not finite; a negative gain; a zero `at` or `up`) leave it
/// unchanged and record `invalidValue` on the context; the `set…` forms also throw.
public final class ALListener: @unchecked Sendable {
    let device: ALDevice
    /// Its context's sticky error (the listener's errors are recorded there).
    private let errors: ALErrorState
    /// Its context, held strongly from the context's creation until `ALContext.destroy` (under
    /// the device's lock): not weakly, which would give the context a side table and make
    /// every retain and release of it (one per API call) take the runtime's slow path. The
    /// device holds the context until destroy anyway.
    @exclusivity(unchecked) var context: ALContext?
    @exclusivity(unchecked) var properties = ALListenerProperties()

    init(device: ALDevice, errors: ALErrorState) {
        self.device = device
        self.errors = errors
    }

    public var position: SIMD3<Float> {
        get { read { $0.position } }
        set { try? setPosition(newValue) }
    }

    public var velocity: SIMD3<Float> {
        get { read { $0.velocity } }
        set { try? setVelocity(newValue) }
    }

    /// "At" (where the listener looks) and "up" vectors.
    public var orientation: (at: SIMD3<Float>, up: SIMD3<Float>) {
        get { read { ($0.at, $0.up) } }
        set { try? setOrientation(at: newValue.at, up: newValue.up) }
    }

    /// Master gain of the context (≥ 0; may be above 1).
    public var gain: Float {
        get { read { $0.gain } }
        set { try? setGain(newValue) }
    }

    public func setPosition(_ value: SIMD3<Float>) throws(ALError) {
        try change("position", valid: Self.isFinite(value)) { $0.position = value }
    }

    public func setVelocity(_ value: SIMD3<Float>) throws(ALError) {
        try change("velocity", valid: Self.isFinite(value)) { $0.velocity = value }
    }

    public func setOrientation(at: SIMD3<Float>, up: SIMD3<Float>) throws(ALError) {
        let valid = Self.isFinite(at) && Self.isFinite(up) && at != .zero && up != .zero
        try change("orientation", valid: valid) {
            $0.at = at
            $0.up = up
        }
    }

    public func setGain(_ value: Float) throws(ALError) {
        try change("gain \(value)", valid: value >= 0 && value.isFinite) { $0.gain = value }
    }

    static func isFinite(_ vector: SIMD3<Float>) -> Bool { vector.x.isFinite && vector.y.isFinite && vector.z.isFinite }

    private func read<T>(_ body: (ALListenerProperties) -> T) -> T {
        device.locked { body(properties) }
    }

    private func change(_ what: String, valid: Bool, _ body: (inout ALListenerProperties) -> Void) throws(ALError) {
        try device.locked { () throws(ALError) in
            guard let context else { throw errors.record(.invalidOperation, "listener.\(what): the context is destroyed") }
            try context.checkLiveLocked("listener.\(what)")
            guard valid else { throw context.recordLocked(.invalidValue, "listener.\(what): invalid value") }
            body(&properties)
            context.globalsChangedLocked()
        }
    }
}
