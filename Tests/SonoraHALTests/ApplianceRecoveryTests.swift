import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The client device across an appliance restart: the loss is an interruption, the
/// reconnect ends it, and audio flows again.
@Suite("Appliance client recovery", .serialized)
struct ApplianceRecoveryTests {
    @Test("server stopped mid-stream → interruptionBegan; restarted → interruptionEnded and audio again")
    func restart() throws {
        let rig = try ApplianceTestRig()
        let period = ApplianceTestRig.period
        let probe = Probe(capacity: 16 * period, pattern: [Float](repeating: 0.5, count: 1 << 20))
        let client = try rig.client(inputs: 1, outputs: 1)
        try client.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 3))
        rig.stop()
        var events: [DeviceEvent] = []
        #expect(ApplianceTestRig.eventually {
            events += client.takeEvents()
            return events.contains { if case .interruptionBegan(.playback, EPIPE) = $0 { true } else { false } }
        })
        let idle = probe.cycles.load(ordering: .acquiring)
        try rig.restart()
        #expect(ApplianceTestRig.eventually {
            events += client.takeEvents()
            return events.contains { if case .interruptionEnded = $0 { true } else { false } }
        })
        #expect(probe.wait(cycles: idle + 4))
        let now = rig.driver.cycles.load(ordering: .acquiring)
        #expect(rig.driver.wait(cycles: now + 2))
        #expect(rig.driver.mixedSamples(0).suffix(period).allSatisfy { $0 == 0.5 })
        #expect(client.statistics.interruptions == 1)
        client.stop()
    }
}
