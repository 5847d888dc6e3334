import SonoraCore
@testable import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Streams in routing groups (a session role's): a `clients` node mixes the groups it names;
/// a stream no node takes is still consumed and its client woken each cycle, so it keeps
/// time instead of stalling.
@Suite("Appliance: streams routed by group", .serialized)
struct ApplianceRoutingGroupTests {
    @Test("a stream in group 2 is heard only through a mix that takes group 2; untaken, its client still runs every cycle")
    func groupsRouteAndUntakenStreamsKeepTime() throws {
        let rig = try ApplianceTestRig()
        let probe = Probe(capacity: 400 * 1024, pattern: [Float](repeating: 0.5, count: 400 * 1024))
        let client = try rig.client(outputs: 1)
        try client.start(IOProcedure(probe))
        defer { client.stop() }
        #expect(probe.wait(cycles: 4))
        #expect(rig.driver.mixedSamples(0).contains(0.5))

        // The program's session takes role 2; the mix takes only group 1: nothing of it is heard…
        rig.server.streams.setGroup(pid: getpid(), group: 2)
        #expect(rig.server.streams.group(pid: getpid()) == 2)
        rig.driver.playbackGroups.store(1 << 1, ordering: .relaxed)
        let mixedBefore = rig.driver.cycles.load(ordering: .acquiring)
        let clientBefore = probe.cycles.load(ordering: .acquiring)
        #expect(rig.driver.wait(cycles: mixedBefore + 12))
        let silentFrom = (mixedBefore + 2) * ApplianceTestRig.period
        let silent = rig.driver.mixedSamples(0)[silentFrom...]
        #expect(!silent.isEmpty && silent.allSatisfy { $0 == 0 }, "group 2 was heard through the group-1 mix")
        // …but the client was woken and consumed every cycle: it kept running.
        #expect(probe.cycles.load(ordering: .acquiring) >= clientBefore + 8, "the untaken stream's client stalled")

        // A mix for group 2 hears it again.
        rig.driver.playbackGroups.store(1 << 2, ordering: .relaxed)
        let again = rig.driver.cycles.load(ordering: .acquiring)
        #expect(rig.driver.wait(cycles: again + 6))
        #expect(rig.driver.mixedSamples(0)[((again + 2) * ApplianceTestRig.period)...].contains(0.5))
        rig.server.streams.forget(pid: getpid())
        #expect(rig.server.streams.group(pid: getpid()) == 0)
    }
}
