/// A change of the transport inside a render cycle: from `frameOffset` on, the transport
/// stands at `position` (and moves on from there).
public struct TransportPositionChange: BitwiseCopyable, Sendable {
    public var frameOffset: Int
    public var position: TransportPosition

    public init(frameOffset: Int, position: TransportPosition) {
        self.frameOffset = frameOffset
        self.position = position
    }
}

/// The transport as the realtime side keeps it: the position at the current cycle's first
/// frame and the changes inside the cycle, behind raw pointers (no ARC on the render path).
/// `Transport` owns the memory; units read it through `HostCallbacks` while the cycle renders.
struct TransportCycle {
    static let changeCapacity = 16
    static let pendingCapacity = 64

    var sampleRate: Double
    /// Where the transport stands at the cycle's first frame.
    var start: TransportPosition
    /// Graph sample time of the cycle's first frame.
    var sampleTime: Double
    var frameCount: Int
    /// Changes in this cycle, by frame offset (at most one per offset).
    var changes: UnsafeMutablePointer<TransportPositionChange>
    var changeCount: Int
    /// Commands taken from the queue, by sample time, not yet due.
    var pending: UnsafeMutablePointer<TransportCommand>
    var pendingCount: Int
    /// Whether play or stop took effect in this cycle (Core Audio's `transportStateChanged`).
    var playStateChanged: Bool
    /// Cycles begun so far.
    var cycles: Int

    /// The position at `frameOffset` into the cycle: the last change at or before it, moved on.
    func position(atFrame frameOffset: Int) -> TransportPosition {
        var index = changeCount - 1
        while index >= 0 && changes[index].frameOffset > frameOffset { index -= 1 }
        if index < 0 { return start.advanced(by: frameOffset, sampleRate: sampleRate) }
        let change = changes[index]
        return change.position.advanced(by: frameOffset - change.frameOffset, sampleRate: sampleRate)
    }
}
