#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A point on the host clock: CLOCK_MONOTONIC in nanoseconds.
///
/// Core Audio's host time ticks in `mach_absolute_time` units; on Linux the
/// ticks are nanoseconds, so the `AudioConvertHostTimeToNanos` family reduces
/// to identity and `ticksPerSecond` is 10⁹.
@frozen
public struct HostTime: RawRepresentable, Hashable, Comparable, Sendable, BitwiseCopyable {
    /// Nanoseconds since an arbitrary fixed point (boot, for CLOCK_MONOTONIC).
    public var rawValue: UInt64

    @inlinable public init(rawValue: UInt64) { self.rawValue = rawValue }

    @inlinable public init(nanoseconds: UInt64) { rawValue = nanoseconds }

    public init(seconds: Double) {
        rawValue = UInt64(max(0, seconds * 1e9).rounded())
    }

    public static let ticksPerSecond: UInt64 = 1_000_000_000

    /// The current host time. Realtime-safe (vDSO `clock_gettime`).
    @inlinable
    public static var now: HostTime {
        var spec = Glibc.timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return HostTime(nanoseconds: UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec))
    }

    @inlinable public var nanoseconds: UInt64 { rawValue }
    @inlinable public var seconds: Double { Double(rawValue) / 1e9 }

    /// This time as a `timespec` (for `clock_nanosleep`, ALSA timestamps).
    public var timespec: Glibc.timespec {
        Glibc.timespec(tv_sec: Int(rawValue / 1_000_000_000), tv_nsec: Int(rawValue % 1_000_000_000))
    }

    public init(_ spec: Glibc.timespec) {
        rawValue = UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    /// Nanoseconds that `frames` take at `sampleRate`.
    @inlinable
    public static func nanoseconds(forFrames frames: Double, sampleRate: Double) -> UInt64 {
        UInt64(max(0, (frames / sampleRate * 1e9).rounded()))
    }

    /// Frames that elapse at `sampleRate` between `self` and a later `other`.
    @inlinable
    public func frames(until other: HostTime, sampleRate: Double) -> Double {
        (Double(other.rawValue) - Double(rawValue)) * sampleRate / 1e9
    }

    @inlinable public static func < (lhs: HostTime, rhs: HostTime) -> Bool { lhs.rawValue < rhs.rawValue }

    @inlinable public static func + (lhs: HostTime, nanoseconds: UInt64) -> HostTime {
        HostTime(rawValue: lhs.rawValue &+ nanoseconds)
    }

    /// Signed nanoseconds from `rhs` to `lhs`.
    @inlinable public static func - (lhs: HostTime, rhs: HostTime) -> Int64 {
        Int64(bitPattern: lhs.rawValue &- rhs.rawValue)
    }
}
