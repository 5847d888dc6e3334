#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
@testable import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import Synchronization
import Testing

@Suite("Wake-up lateness histogram", .serialized)
struct LatenessHistogramTests {
    @Test("every lateness lands in a bucket that contains it, no wider than a quarter of its lower bound")
    func bucketsContainTheirValues() {
        var generator = SeededGenerator(seed: 21)
        var values = Array(0...4096)
        for _ in 0..<20_000 { values.append(Int(generator.next() % 3_000_000)) }
        for microseconds in values {
            let bucket = LatenessHistogram.bucket(microseconds: microseconds)
            let (lower, upper) = LatenessHistogram.bounds(of: bucket)
            #expect(Double(microseconds) >= lower && Double(microseconds) < upper, "\(microseconds) µs in bucket \(bucket) [\(lower), \(upper))")
            if upper.isFinite && lower >= 4 { #expect(upper - lower <= lower / 4) }
        }
        #expect(LatenessHistogram.bucket(microseconds: 10_000_000) == LatenessHistogram.bucketCount - 1)
    }

    @Test("percentiles of a known distribution are within a bucket's width")
    func percentiles() {
        let histogram = LatenessHistogram.allocate()
        defer { histogram.deallocate() }
        // 1000 wake-ups: 1 µs … 1000 µs late, once each.
        for microseconds in 1...1000 { histogram.record(nanoseconds: microseconds * 1000) }
        let distribution = histogram.distribution()
        #expect(distribution.count == 1000)
        #expect(distribution.maximumNanoseconds == 1_000_000)
        for (fraction, exact) in [(0.5, 500e-6), (0.9, 900e-6), (0.99, 990e-6)] {
            let estimate = try! #require(distribution.percentile(fraction))
            #expect(abs(estimate - exact) <= exact * 0.25, "p\(fraction * 100): \(estimate) s, exactly \(exact) s")
        }
        #expect(distribution.percentile(1)! <= 1000e-6)
        #expect(LatenessDistribution().percentile(0.5) == nil)
        // Early wake-ups count as on time.
        histogram.record(nanoseconds: -5000)
        #expect(histogram.distribution().buckets[0] == 1)
    }

    @Test("recording allocates nothing", .enabled(if: AllocationCounter.isAvailable))
    func recordDoesNotAllocate() {
        let histogram = LatenessHistogram.allocate()
        defer { histogram.deallocate() }
        var generator = SeededGenerator(seed: 7)
        let values = UnsafeMutableBufferPointer<Int>.allocate(capacity: 10_000)
        defer { values.deallocate() }
        for index in values.indices { values[index] = Int(generator.next() % 5_000_000_000) }
        func recordAll() {
            var index = 0
            while index < values.count {
                histogram.record(nanoseconds: values[index])
                index += 1
            }
        }
        recordAll()  // warm up: a first call may allocate runtime metadata
        let allocations = AllocationCounter.count { recordAll() }
        #expect(allocations == 0)
        #expect(histogram.distribution().count == 20_000)
    }

    /// Counts every heap call the I/O thread makes between two cycles: the device's wake-up
    /// (with the histogram's `record`) and the render between them.
    final class CountingTarget: IOCycleTarget, @unchecked Sendable {
        let cycles = Atomic<Int>(0)
        let allocations = Atomic<Int>(-1)
        let begin = 50, end = 150

        override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
            let index = cycles.load(ordering: .relaxed)
            if index == begin { AllocationCounter.begin() }
            if index == end { allocations.store(AllocationCounter.end(), ordering: .relaxed) }
            cycles.store(index + 1, ordering: .releasing)
            return 0
        }
    }

    @Test("the null device's I/O thread fills the histogram without allocating", .enabled(if: AllocationCounter.isAvailable))
    func ioThreadFillsHistogram() throws {
        let device = try TimerDevice(
            configuration: AudioDeviceConfiguration(periodFrames: 64, inputChannels: 0, outputChannels: 2, realtimePriority: 50), mode: .null)
        let target = CountingTarget()
        try device.start(IOProcedure(target))
        var waited = 0
        while target.allocations.load(ordering: .relaxed) < 0 && waited < 2000 {
            usleep(5000)
            waited += 1
        }
        device.stop()
        let lateness = device.wakeUpLateness
        #expect(target.allocations.load(ordering: .relaxed) == 0, "heap calls on the I/O thread over 100 cycles")
        #expect(lateness.count >= target.end, "wake-ups recorded: \(lateness.count)")
        #expect(lateness.percentile(0.5) != nil)
        // Not cleared with the load figures (the status line clears those every second).
        device.resetLoad()
        #expect(device.wakeUpLateness.count == lateness.count)
    }
}
