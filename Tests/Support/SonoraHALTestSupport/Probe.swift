import SonoraCore
import SonoraHAL
import SonoraTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An I/O procedure for tests: plays `pattern` (from output frame `patternStart`), keeps
/// what it captures, and can stall once, count allocations, or stop after some cycles.
/// Everything it stores is preallocated, so it does not allocate on the I/O thread.
public final class Probe: IOCycleTarget, @unchecked Sendable {
    public let capacity: Int
    public let captured: UnsafeMutableBufferPointer<Float>
    public let played: UnsafeMutableBufferPointer<Float>
    public let sampleTimes: UnsafeMutableBufferPointer<Double>
    public let pattern: [Float]
    public let patternStart: Int
    public let cycles = Atomic<Int>(0)
    public private(set) var framesCaptured = 0
    public private(set) var framesPlayed = 0
    /// Sleep this long (µs) in cycle `stallCycle` (−1: never).
    public var stallCycle = -1
    public var stallMicroseconds: UInt32 = 0
    /// Count heap calls on the I/O thread from cycle `countFrom` to `countUntil` (the count
    /// lands in `allocations`; −1 until then).
    public var countFrom = -1
    public var countUntil = -1
    public let allocations = Atomic<Int>(-1)
    /// How counting begins and ends, if not with `AllocationCounter` (kept for older tests).
    public var beginCounting: (() -> Void)?
    public var endCounting: (() -> Int)?

    public init(capacity: Int, pattern: [Float] = [], patternStart: Int = 0) {
        self.capacity = capacity
        captured = .allocate(capacity: capacity)
        captured.initialize(repeating: .nan)
        played = .allocate(capacity: capacity)
        played.initialize(repeating: 0)
        sampleTimes = .allocate(capacity: 1 << 16)
        sampleTimes.initialize(repeating: -1)
        self.pattern = pattern
        self.patternStart = patternStart
    }

    deinit {
        captured.deallocate()
        played.deallocate()
        sampleTimes.deallocate()
    }

    override public func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        let index = cycles.load(ordering: .relaxed)
        if index == countFrom { if let beginCounting { beginCounting() } else { AllocationCounter.begin() } }
        if index == countUntil { allocations.store(endCounting?() ?? AllocationCounter.end(), ordering: .relaxed) }
        if index == stallCycle { usleep(stallMicroseconds) }
        if index < sampleTimes.count { sampleTimes[index] = cycle.pointee.inputTime.sampleTime }
        let frames = cycle.pointee.frameCount
        if cycle.pointee.input.channelCount > 0 && framesCaptured + frames <= capacity {
            (captured.baseAddress! + framesCaptured).update(from: cycle.pointee.input.samples(0), count: frames)
            framesCaptured += frames
        }
        let output = cycle.pointee.output
        if output.channelCount > 0 {
            pattern.withUnsafeBufferPointer { pattern in
                for frame in 0..<frames {
                    let position = framesPlayed + frame - patternStart
                    let value: Float = position >= 0 && position < pattern.count ? pattern[position] : 0
                    for channel in 0..<output.channelCount { output.samples(channel)[frame] = channel == 0 ? value : -value }
                    if framesPlayed + frame < capacity { played[framesPlayed + frame] = value }
                }
            }
            framesPlayed += frames
        }
        cycles.store(index + 1, ordering: .releasing)
        return 0
    }

    /// Waits (polling) until `count` cycles ran or `seconds` passed.
    public func wait(cycles count: Int, seconds: Double = 30) -> Bool {
        let deadline = HostTime.now.seconds + seconds
        while cycles.load(ordering: .acquiring) < count {
            if HostTime.now.seconds > deadline { return false }
            usleep(2000)
        }
        return true
    }

    /// Where the pattern first shows up in the capture, minus where it was played.
    public func measuredRoundTrip() -> Int? {
        guard let first = pattern.firstIndex(where: { $0 != 0 }) else { return nil }
        let playedAt = patternStart + first
        guard let heardAt = (0..<framesCaptured).first(where: { captured[$0] != 0 && !captured[$0].isNaN }) else { return nil }
        return heardAt - playedAt
    }

    /// True if the capture holds the whole pattern bit for bit, `roundTrip` frames later.
    public func captureMatchesPattern(roundTrip: Int) -> Bool {
        let start = patternStart + roundTrip
        guard start + pattern.count <= framesCaptured else { return false }
        for index in pattern.indices where captured[start + index] != pattern[index] { return false }
        return true
    }
}
