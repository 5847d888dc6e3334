/// When a buffer is to be heard or was captured, as Core Audio's `AudioTimeStamp`
/// (without SMPTE time, which Sonora does not carry).
@frozen
public struct AudioTimeStamp: Hashable, Sendable, BitwiseCopyable {
    /// Which fields hold values (`mFlags`), with Core Audio's bits.
    @frozen
    public struct Flags: OptionSet, Hashable, Sendable, BitwiseCopyable {
        public var rawValue: UInt32
        @inlinable public init(rawValue: UInt32) { self.rawValue = rawValue }

        // Inlinable computed constants, not `static let`: another module reads a `static let`
        // through its addressor, a call on every render that checks a time stamp's flags.
        @inlinable public static var sampleTimeValid: Flags { Flags(rawValue: 1 << 0) }
        @inlinable public static var hostTimeValid: Flags { Flags(rawValue: 1 << 1) }
        @inlinable public static var rateScalarValid: Flags { Flags(rawValue: 1 << 2) }
        @inlinable public static var wordClockTimeValid: Flags { Flags(rawValue: 1 << 3) }
        @inlinable public static var sampleHostTimeValid: Flags { Flags(rawValue: 1 << 0 | 1 << 1) }
    }

    /// Frames since the stream started (Double, as in Core Audio, to count past 2⁵³ never).
    public var sampleTime: Double
    /// Host clock time (nanoseconds, see `HostTime`).
    public var hostTime: UInt64
    /// Actual over nominal sample rate of the device clock.
    public var rateScalar: Double
    public var wordClockTime: UInt64
    public var flags: Flags

    @inlinable
    public init(
        sampleTime: Double = 0, hostTime: UInt64 = 0, rateScalar: Double = 1,
        wordClockTime: UInt64 = 0, flags: Flags = []
    ) {
        self.sampleTime = sampleTime
        self.hostTime = hostTime
        self.rateScalar = rateScalar
        self.wordClockTime = wordClockTime
        self.flags = flags
    }

    /// A time stamp carrying a sample time only.
    @inlinable
    public init(sampleTime: Double) {
        self.init(sampleTime: sampleTime, flags: .sampleTimeValid)
    }

    /// A time stamp carrying a sample time and the host time it corresponds to.
    @inlinable
    public init(sampleTime: Double, hostTime: HostTime) {
        self.init(sampleTime: sampleTime, hostTime: hostTime.rawValue, flags: .sampleHostTimeValid)
    }

    /// This time stamp moved on by `frames`; host time follows at `sampleRate` when valid.
    @inlinable
    public func advanced(byFrames frames: Int, sampleRate: Double) -> AudioTimeStamp {
        var next = self
        next.sampleTime += Double(frames)
        if flags.contains(.hostTimeValid) {
            let rate = flags.contains(.rateScalarValid) ? sampleRate * rateScalar : sampleRate
            next.hostTime &+= HostTime.nanoseconds(forFrames: Double(frames), sampleRate: rate)
        }
        return next
    }
}
