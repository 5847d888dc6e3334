import SonoraCore
@testable import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A program interrupted (or ducked) that opens a new stream — a player started while the
/// intercom holds the speaker — is not heard at full level until the policy says so.
@Suite("Appliance: a program's gain holds for streams it opens later", .serialized)
struct ApplianceKeptGainTests {
    @Test("a stream opened after setGain starts at that gain; restored to 1 it is full again; forget drops it")
    func laterStreamsStartAtTheGain() throws {
        let rig = try ApplianceTestRig()
        rig.server.streams.setGain(pid: getpid(), gain: 0.25, rampFrames: 256)
        #expect(rig.server.streams.keptGain(pid: getpid()) == 0.25)
        let probe = Probe(capacity: 64 * 256, pattern: [Float](repeating: 0.5, count: 64 * 256))
        let client = try rig.client(outputs: 1)
        try client.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 6))
        let mixed = rig.driver.mixedSamples(0)
        // Never louder than the kept gain: 0.5 × 0.25.
        #expect(mixed.contains(0.125))
        #expect(mixed.allSatisfy { $0 <= 0.125 }, "a sample above 0.125: \(mixed.max() ?? 0)")
        client.stop()
        rig.server.streams.setGain(pid: getpid(), gain: 1, rampFrames: 0)
        #expect(rig.server.streams.keptGain(pid: getpid()) == nil)
        rig.server.streams.setGain(pid: 4242, gain: 0, rampFrames: 0)
        rig.server.streams.forget(pid: 4242)
        #expect(rig.server.streams.keptGain(pid: 4242) == nil)
    }
}
