/// Core Audio's host callbacks (`kAudioUnitProperty_HostCallbacks`: `HostCallback_GetBeatAndTempo`,
/// `HostCallback_GetMusicalTimeLocation`, `HostCallback_GetTransportState`), as a value a unit
/// reads from `AudioUnit.hostCallbacks` while it renders. The graph hands them to every node
/// when a `Transport` is attached. Realtime-safe: plain reads of the transport's cycle state.
/// Frame offsets are into the render cycle (`RenderContext.frameOffset` + a frame of the slice).
public struct HostCallbacks: BitwiseCopyable, @unchecked Sendable {
    let cycle: UnsafePointer<TransportCycle>

    /// `HostCallback_GetBeatAndTempo`.
    public struct BeatAndTempo: Equatable, Sendable {
        public var currentBeat: Double
        public var currentTempo: Double
    }

    /// `HostCallback_GetMusicalTimeLocation`.
    public struct MusicalTimeLocation: Equatable, Sendable {
        /// Frames from the asked-for frame to the next whole beat (0 when stopped or on a beat).
        public var deltaSampleOffsetToNextBeat: Int
        public var timeSignatureNumerator: Float
        public var timeSignatureDenominator: Int
        /// The beat the current bar starts on.
        public var currentMeasureDownBeat: Double
    }

    /// `HostCallback_GetTransportState` (Sonora's transport does not loop: never cycling).
    public struct TransportState: Equatable, Sendable {
        public var isPlaying: Bool
        /// Play or stop took effect in this render cycle.
        public var transportStateChanged: Bool
        public var currentSampleInTimeLine: Double
        public var isCycling: Bool
        public var cycleStartBeat: Double
        public var cycleEndBeat: Double
    }

    /// The whole position at `frameOffset` into the cycle.
    public func position(atFrame frameOffset: Int = 0) -> TransportPosition {
        cycle.pointee.position(atFrame: frameOffset)
    }

    public func beatAndTempo(atFrame frameOffset: Int = 0) -> BeatAndTempo {
        let position = position(atFrame: frameOffset)
        return BeatAndTempo(currentBeat: position.beat, currentTempo: position.tempo)
    }

    public func musicalTimeLocation(atFrame frameOffset: Int = 0) -> MusicalTimeLocation {
        let position = position(atFrame: frameOffset)
        var delta = 0
        let fraction = position.beat - position.beat.rounded(.down)
        if position.isPlaying && fraction > 0 {
            delta = Int(((1 - fraction) * 60 * cycle.pointee.sampleRate / position.tempo).rounded(.up))
        }
        return MusicalTimeLocation(
            deltaSampleOffsetToNextBeat: delta, timeSignatureNumerator: Float(position.timeSignature.beatsPerBar),
            timeSignatureDenominator: Int(position.timeSignature.beatUnit), currentMeasureDownBeat: position.downBeat)
    }

    public func transportState(atFrame frameOffset: Int = 0) -> TransportState {
        let position = position(atFrame: frameOffset)
        return TransportState(
            isPlaying: position.isPlaying, transportStateChanged: cycle.pointee.playStateChanged,
            currentSampleInTimeLine: Double(position.frame), isCycling: false, cycleStartBeat: 0, cycleEndBeat: 0)
    }

    /// Changes inside the current cycle, in frame order (for units that pass them on at their
    /// exact frame, as the LV2 host does with time:Position).
    public var changeCount: Int { cycle.pointee.changeCount }

    public func change(_ index: Int) -> TransportPositionChange { cycle.pointee.changes[index] }

    /// Graph sample time of the current cycle's first frame.
    public var cycleSampleTime: Double { cycle.pointee.sampleTime }
}
