/// A second-order delay-locked loop on a device clock (Fons Adriaensen, "Using a DLL to
/// filter time", 2005 — the loop JACK uses): fed the wake-up time of each period, it
/// gives a smoothed time for each period's start and the device's actual period length,
/// hence its rate against the host clock.
public struct DelayLockedLoop: Sendable {
    public let nominalPeriod: Double
    private let b: Double
    private let c: Double
    /// Smoothed time of the current period's start (seconds).
    public private(set) var periodStart: Double = 0
    /// Predicted start of the next period.
    public private(set) var nextPeriodStart: Double = 0
    /// Smoothed period length (seconds).
    public private(set) var period: Double
    public private(set) var isLocked = false

    /// `bandwidth` in Hz: about 0.1–1 Hz follows drift and ignores wake-up jitter.
    public init(periodSeconds: Double, bandwidth: Double = 0.5) {
        nominalPeriod = periodSeconds
        let omega = 2 * Double.pi * bandwidth * periodSeconds
        b = 2.0.squareRoot() * omega
        c = omega * omega
        period = periodSeconds
    }

    /// Restarts the loop at `time` (after start or an xrun).
    public mutating func reset(at time: Double) {
        period = nominalPeriod
        periodStart = time
        nextPeriodStart = time + nominalPeriod
        isLocked = true
    }

    /// Feeds the wake-up time of the next period; returns its lateness against the
    /// prediction (seconds; positive = woke late). Inlined into the drivers' cycles: a call
    /// was one more code line to fetch cold after each sleep (`sonora-bench network` profile).
    @discardableResult @inline(__always)
    public mutating func update(at time: Double) -> Double {
        guard isLocked else { reset(at: time); return 0 }
        let error = time - nextPeriodStart
        periodStart = nextPeriodStart
        nextPeriodStart += b * error + period
        period += c * error
        return error
    }

    /// Actual over nominal sample rate of the device clock.
    public var rateScalar: Double { nominalPeriod / period }
}
