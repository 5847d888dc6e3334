import Synchronization

/// Wake-up lateness of the I/O thread, counted into fixed buckets with relaxed atomics:
/// `record` runs on the I/O thread (no allocation, no lock, no ARC — the histogram is a
/// struct of pointers to memory allocated before the thread starts); `distribution()` is
/// read on the control side at any time.
///
/// Buckets are in microseconds, four per octave (HdrHistogram-style): 0, 1, 2, 3 µs
/// exactly, then [4,5) [5,6) [6,7) [7,8) [8,10) … up to about 2 s; a bucket's width is
/// at most a quarter of its lower bound, so a percentile read from it is within ~25 %.
/// Later wake-ups land in the last bucket. Counts are cumulative since the device started.
public struct LatenessHistogram: @unchecked Sendable {
    /// Octaves above 4 µs: the last finite bucket ends at 4 µs × 2^19 ≈ 2.1 s.
    static let octaves = 19
    /// 4 exact buckets (0…3 µs), 4 per octave, and one for anything later.
    public static let bucketCount = 4 + octaves * 4 + 1

    private let counts: UnsafeMutablePointer<Atomic<Int>>
    private let maximum: UnsafeMutablePointer<Atomic<Int>>
    private let sum: UnsafeMutablePointer<Atomic<Int>>

    /// Allocates the buckets; `deallocate()` frees them once no thread records any more.
    public static func allocate() -> LatenessHistogram { LatenessHistogram() }

    private init() {
        counts = .allocate(capacity: Self.bucketCount)
        for index in 0..<Self.bucketCount { (counts + index).initialize(to: Atomic(0)) }
        maximum = .allocate(capacity: 1)
        maximum.initialize(to: Atomic(0))
        sum = .allocate(capacity: 1)
        sum.initialize(to: Atomic(0))
    }

    public func deallocate() {
        counts.deallocate()
        maximum.deallocate()
        sum.deallocate()
    }

    /// The bucket of a lateness in microseconds.
    @inline(__always)
    static func bucket(microseconds: Int) -> Int {
        if microseconds < 4 { return max(0, microseconds) }
        let exponent = Int.bitWidth - 1 - microseconds.leadingZeroBitCount  // ≥ 2
        let index = 4 + (exponent - 2) * 4 + ((microseconds >> (exponent - 2)) & 3)
        return min(index, bucketCount - 1)
    }

    /// The bucket's range in microseconds (the last one's upper end is infinite).
    static func bounds(of bucket: Int) -> (lower: Double, upper: Double) {
        if bucket < 4 { return (Double(bucket), Double(bucket + 1)) }
        if bucket == bucketCount - 1 { return (Double(4 << octaves), .infinity) }
        let octave = (bucket - 4) / 4, step = (bucket - 4) % 4
        let width = Double(1 << octave)
        return (Double(4 + step) * width, Double(5 + step) * width)
    }

    /// On the I/O thread: one wake-up, `nanoseconds` late (early counts as 0).
    @inline(__always)
    public func record(nanoseconds: Int) {
        let value = max(0, nanoseconds)
        counts[Self.bucket(microseconds: value / 1000)].wrappingAdd(1, ordering: .relaxed)
        sum.pointee.wrappingAdd(value, ordering: .relaxed)
        if value > maximum.pointee.load(ordering: .relaxed) { maximum.pointee.store(value, ordering: .relaxed) }
    }

    /// The counts now.
    public func distribution() -> LatenessDistribution {
        var buckets = [Int](repeating: 0, count: Self.bucketCount)
        for index in 0..<Self.bucketCount { buckets[index] = counts[index].load(ordering: .relaxed) }
        return LatenessDistribution(
            buckets: buckets, sumNanoseconds: sum.pointee.load(ordering: .relaxed),
            maximumNanoseconds: maximum.pointee.load(ordering: .relaxed))
    }
}

/// A copy of a `LatenessHistogram`'s counts, with percentiles read from them.
public struct LatenessDistribution: Hashable, Sendable {
    /// Wake-ups per bucket (`LatenessHistogram`'s layout).
    public var buckets: [Int]
    public var sumNanoseconds: Int
    public var maximumNanoseconds: Int

    public init(buckets: [Int] = [], sumNanoseconds: Int = 0, maximumNanoseconds: Int = 0) {
        self.buckets = buckets
        self.sumNanoseconds = sumNanoseconds
        self.maximumNanoseconds = maximumNanoseconds
    }

    public var count: Int { buckets.reduce(0, +) }

    /// The lateness (seconds) below which `fraction` (0…1) of the wake-ups fell,
    /// interpolated inside its bucket and never above the maximum seen; nil with no wake-up.
    public func percentile(_ fraction: Double) -> Double? {
        let total = count
        guard total > 0 else { return nil }
        let rank = min(max(fraction, 0), 1) * Double(total)
        var below = 0
        let maximumMicroseconds = Double(maximumNanoseconds) / 1000
        for (index, inBucket) in buckets.enumerated() where inBucket > 0 {
            if Double(below + inBucket) >= rank {
                var (lower, upper) = LatenessHistogram.bounds(of: index)
                upper = min(upper, max(lower, maximumMicroseconds))
                let within = (rank - Double(below)) / Double(inBucket)
                return (lower + (upper - lower) * max(0, within)) / 1e6
            }
            below += inBucket
        }
        return maximumMicroseconds / 1e6
    }
}
