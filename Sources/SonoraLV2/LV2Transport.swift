import SonoraCore

/// Where a transport (a sequencer, a timeline) stands, as LV2's time:Position tells it.
public struct LV2Transport: Hashable, Sendable {
    /// Frame position on the timeline.
    public var frame: Int64
    /// 0 stopped, 1 playing (other values: varispeed).
    public var speed: Float
    public var beatsPerMinute: Float
    public var bar: Int64
    /// Beat within the bar (fractional).
    public var barBeat: Float
    public var beatsPerBar: Float
    public var beatUnit: Int32

    public init(
        frame: Int64 = 0, speed: Float = 1, beatsPerMinute: Float = 120, bar: Int64 = 0, barBeat: Float = 0,
        beatsPerBar: Float = 4, beatUnit: Int32 = 4
    ) {
        self.frame = frame
        self.speed = speed
        self.beatsPerMinute = beatsPerMinute
        self.bar = bar
        self.barBeat = barBeat
        self.beatsPerBar = beatsPerBar
        self.beatUnit = beatUnit
    }
}

extension LV2AtomForge {
    func position(_ transport: LV2Transport) -> [UInt8] {
        object(
            LV2URI.timePosition,
            [
                (LV2URI.timeFrame, atom(.long(transport.frame))),
                (LV2URI.timeSpeed, atom(.float(transport.speed))),
                (LV2URI.timeBeatsPerMinute, atom(.float(transport.beatsPerMinute))),
                (LV2URI.timeBar, atom(.long(transport.bar))),
                (LV2URI.timeBarBeat, atom(.float(transport.barBeat))),
                (LV2URI.timeBeatsPerBar, atom(.float(transport.beatsPerBar))),
                (LV2URI.timeBeatUnit, atom(.int(transport.beatUnit))),
            ])
    }
}

extension LV2Unit {
    /// Whether an atom input takes time:Position.
    public var takesTransport: Bool {
        plugin.ports.contains { $0.kind == .atom && $0.direction == .input && $0.supports.contains(LV2URI.timePosition) }
    }

    /// Tells the plugin where the transport stands (time:Position at the start of the next
    /// render, on the control atom input). Send it when the transport starts, stops, jumps or
    /// changes tempo; plugins follow the timeline from there.
    public func sendTransport(_ transport: LV2Transport) throws(AudioError) {
        guard takesTransport else {
            throw AudioError(.invalidProperty, "\(name) (\(plugin.uri)) takes no time:Position")
        }
        try send(LV2AtomForge(urids: world.urids).position(transport))
    }
}
