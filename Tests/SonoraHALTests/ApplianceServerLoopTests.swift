@testable import SonoraHAL
import SonoraCore
import SonoraHALTestSupport
import SonoraTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The server's loop wakes for what happens on its sockets and for faults, not on a timer:
/// streaming clients cost the loop nothing between requests.
@Suite("Appliance server loop", .serialized)
struct ApplianceServerLoopTests {
    @Test("while clients stream and ask nothing, the loop does not wake; a request and a fault still wake it")
    func sleepsUntilSomethingHappens() throws {
        let rig = try ApplianceTestRig()
        let first = Probe(capacity: 4096, pattern: [Float](repeating: 0.25, count: 1 << 16))
        let second = Probe(capacity: 4096, pattern: [Float](repeating: 0.25, count: 1 << 16))
        let a = try rig.client(outputs: 1, name: "first")
        let b = try rig.client(inputs: 1, outputs: 1, name: "second")
        try a.start(IOProcedure(first))
        try b.start(IOProcedure(second))
        #expect(first.wait(cycles: 3) && second.wait(cycles: 3))
        #expect(ApplianceTestRig.eventually { rig.server.clients.count == 2 && rig.server.clients.allSatisfy { !$0.streams.isEmpty } })
        // Settled (every reply flushed): count the loop's turns over 20 of the appliance's cycles.
        let cycles = rig.driver.cycles.load(ordering: .acquiring)
        #expect(rig.driver.wait(cycles: cycles + 3))
        let before = rig.server.loopTurns.load(ordering: .relaxed)
        let start = rig.driver.cycles.load(ordering: .acquiring)
        #expect(rig.driver.wait(cycles: start + 20))
        let idle = rig.server.loopTurns.load(ordering: .relaxed) - before
        // (A 20 ms timeout woke it about 20 times here: the cycles are 1024 frames at 48 kHz.)
        #expect(idle == 0, "the loop woke \(idle) times while nothing happened")
        // The list read now carries the streams' figures as of now, and both programs.
        let listed = rig.server.clients
        #expect(Set(listed.map(\.name)) == ["first", "second"])
        #expect(listed.flatMap(\.streams).count == 3)
        // A request wakes it and is answered.
        let raw = try RawApplianceClient(path: rig.path)
        let reply = try #require(raw.ask(#"{"id":1,"op":"hello","name":"late"}"#))
        #expect(try ApplianceJSON.parseObject(Array(reply.utf8))["ok"] == true)
        #expect(rig.server.clients.contains { $0.name == "late" })
        // A fault wakes it through the table's eventfd (no timer to find it): removed, told.
        let connection = try ApplianceConnection.connect(path: rig.path, name: "forger")
        let removed = Mutex<[ApplianceEvent]>([])
        connection.onEvent { event in removed.withLock { $0.append(event) } }
        let forged = try ApplianceClientStream(connection: connection, direction: .playback, channels: 1)
        forged.ring.writePosition.pointee.store(Int.max - 3, ordering: .releasing)
        #expect(ApplianceTestRig.eventually { removed.withLock { $0.contains(.streamRemoved(stream: forged.id, reason: "faulted")) } })
        #expect(ApplianceTestRig.eventually { !rig.server.streams.snapshot().contains { $0.id == forged.id } })
        #expect(rig.server.clients.first { $0.name == "forger" }?.streams.isEmpty == true)
        a.stop()
        b.stop()
        withExtendedLifetime((first, second, connection, forged, raw)) {}
    }
}
