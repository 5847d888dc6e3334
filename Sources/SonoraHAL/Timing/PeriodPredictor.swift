/// Predicts when a device's next period will be ready, from its hardware pointer: each
/// observation (`avail` frames readable/writable at host time `t`) dates the moment the
/// period being taken became ready, `t − (avail − period) / rate`; a delay-locked loop on
/// those moments follows the device clock's rate and phase and ignores the pointer's
/// steps and the reading's jitter. This is what timer-driven wake-ups sleep towards
/// (PipeWire's ALSA "tsched" does the same on `snd_pcm_htimestamp`/`avail`).
public struct PeriodPredictor: Sendable {
    public let periodFrames: Int
    public let sampleRate: Double
    public let bandwidth: Double
    private var loop: DelayLockedLoop
    /// Observations whose error exceeded half a period (the loop restarted on them).
    public private(set) var restarts = 0

    public init(periodFrames: Int, sampleRate: Double, bandwidth: Double = 1) {
        self.periodFrames = periodFrames
        self.sampleRate = sampleRate
        self.bandwidth = bandwidth
        loop = DelayLockedLoop(periodSeconds: Double(periodFrames) / sampleRate, bandwidth: bandwidth)
    }

    /// True once an observation has been fed since the last `reset()`.
    public var isLocked: Bool { loop.isLocked }

    /// Forgets the phase (stream start, xrun): the next observation starts the loop again.
    public mutating func reset() {
        loop = DelayLockedLoop(periodSeconds: loop.nominalPeriod, bandwidth: bandwidth)
    }

    /// When the period after the one just observed will be ready (host seconds).
    public var nextReady: Double { loop.nextPeriodStart }

    /// The device's period as measured against the host clock (seconds).
    public var measuredPeriod: Double { loop.period }

    /// Feeds one reading of the pointer: `avail` frames were ready at host time `time`
    /// (seconds), and one period of them is taken now. `bracketed`: a reading just before
    /// (microseconds) saw less than a period, so the period became ready between the two
    /// and the moment is exact to the reading interval. Otherwise (the thread woke after
    /// the period was ready) a pointer that moves in steps only bounds the moment from
    /// above — it may have been ready up to a step earlier — so such a reading only moves
    /// the prediction earlier; fed as if exact, the loop would lock onto its own late
    /// wake-ups. Returns the error used (seconds; positive: ready later than predicted).
    @discardableResult
    public mutating func observe(avail: Int, at time: Double, bracketed: Bool = true) -> Double {
        let ready = time - Double(avail - periodFrames) / sampleRate
        guard loop.isLocked else {
            loop.reset(at: ready)
            return 0
        }
        var error = ready - loop.nextPeriodStart
        // A jump (a stall the device survived, a pointer reset): start again there
        // rather than slew towards it for seconds.
        if abs(error) > loop.nominalPeriod / 2 {
            restarts += 1
            loop.reset(at: ready)
            return error
        }
        if !bracketed { error = min(error, 0) }
        loop.update(at: loop.nextPeriodStart + error)
        return error
    }
}
