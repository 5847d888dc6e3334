@testable import SonoraHAL
import SonoraCore
import SonoraHALTestSupport
import SonoraTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A duplex client of the appliance keeps its round trip when it is late once: the
/// appliance never waits for it, so the periods it delivered meanwhile must not stay queued.
@Suite("Appliance duplex client after a stall", .serialized)
struct ApplianceDuplexAlignmentTests {
    static let period = ApplianceTestRig.period

    /// Plays back what it captures; once, at its cycle `stallAt`, it first sleeps `stall`
    /// microseconds (a client the scheduler set aside for a few of the appliance's periods).
    final class StallingLoop: IOCycleTarget, @unchecked Sendable {
        let stallAt: Int
        let stall: UInt32
        let cycles = Atomic<Int>(0)

        init(stallAt: Int, stall: UInt32) {
            self.stallAt = stallAt
            self.stall = stall
        }

        override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
            let index = cycles.load(ordering: .relaxed)
            if index == stallAt { usleep(stall) }
            let frames = cycle.pointee.frameCount
            cycle.pointee.output.samples(0).update(from: cycle.pointee.input.samples(0), count: frames)
            cycles.store(index + 1, ordering: .releasing)
            return 0
        }
    }

    /// How many frames after it was captured each mixed frame of `cycles` played (nil where
    /// the frame is silence or not a capture value, e.g. an underrun).
    static func delays(_ mixed: [Float], cycles: Range<Int>) -> [Int] {
        cycles.flatMap { cycle in
            (cycle * period..<(cycle + 1) * period).compactMap { frame -> Int? in
                guard frame < mixed.count, mixed[frame] > 0, !mixed[frame].isNaN else { return nil }
                let captured = Int((mixed[frame] * Float(1 << 24)).rounded()) - 1
                return frame - captured
            }
        }
    }

    @Test("a duplex client late for 2.5 periods goes back to a one-period round trip, the skipped capture counted")
    func roundTripAfterStall() throws {
        let rig = try ApplianceTestRig()
        let loop = StallingLoop(stallAt: 8, stall: UInt32(2.5 * Double(Self.period) / Double(ApplianceTestRig.sampleRate) * 1e6))
        let client = try rig.client(inputs: 1, outputs: 1)
        try client.start(IOProcedure(loop))
        let start = rig.driver.cycles.load(ordering: .acquiring)
        #expect(rig.driver.wait(cycles: start + 24))
        let mixed = rig.driver.mixedSamples(0)
        let xruns = client.statistics.captureXruns
        client.stop()
        let end = mixed.count / Self.period
        // Before the stall (the client's cycles 2–6) and after it (the last four periods).
        let before = Self.delays(mixed, cycles: (start + 2)..<(start + 6))
        let after = Self.delays(mixed, cycles: (end - 4)..<end)
        #expect(!before.isEmpty && !after.isEmpty)
        #expect(Set(before) == [Self.period], "round trip before the stall: \(Set(before))")
        #expect(Set(after) == [Self.period], "round trip after the stall: \(Set(after))")
        #expect(xruns >= 1)
    }
}
