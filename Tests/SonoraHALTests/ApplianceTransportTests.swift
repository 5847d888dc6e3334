@testable import SonoraHAL
import SonoraCore
import SonoraHALTestSupport
import SonoraTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Audio through the appliance's transport: an in-process `ApplianceServer` serviced once
/// per period by a null device, and `ApplianceDevice` clients on its socket.
@Suite("Appliance transport", .serialized)
struct ApplianceTransportTests {
    static let period = ApplianceTestRig.period

    /// The ramp a client plays: frame k is (k + 1) / 2^20, exact in Float.
    static func ramp(_ count: Int) -> [Float] { (0..<count).map { Float($0 + 1) / Float(1 << 20) } }

    @Test("a client's ramp arrives bit-exact in the mix, one period after the prefill, with no underrun")
    func playbackExact() throws {
        let rig = try ApplianceTestRig()
        let pattern = Self.ramp(8 * Self.period)
        let probe = Probe(capacity: 32 * Self.period, pattern: pattern)
        let client = try rig.client(outputs: 1)
        #expect(client.driver == "sonora")
        #expect(client.format.periodFrames == Self.period)
        try client.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 12))
        let mixed = rig.driver.mixedSamples(0)
        let right = rig.driver.mixedSamples(1)
        client.stop()
        let streams = rig.server.streams.snapshot()
        #expect(streams.isEmpty)
        guard let first = mixed.firstIndex(where: { $0 != 0 && !$0.isNaN }) else {
            Issue.record("the ramp never reached the mix")
            return
        }
        // The stream starts at a cycle boundary with the prefilled period, so the first
        // frame the client rendered lands on a boundary, the period after.
        #expect(first % Self.period == 0)
        #expect(first >= Self.period)
        #expect(Array(mixed[(first - Self.period)..<first]) == [Float](repeating: 0, count: Self.period))
        let arrived = Array(mixed[first..<min(mixed.count, first + pattern.count)])
        #expect(arrived.count == pattern.count)
        #expect(arrived == Array(pattern.prefix(arrived.count)))
        // Mono → every output channel.
        #expect(Array(right[first..<first + arrived.count]) == arrived)
    }

    @Test("capture reaches the client bit-exact and contiguous")
    func captureExact() throws {
        let rig = try ApplianceTestRig()
        let probe = Probe(capacity: 8 * Self.period)
        let client = try rig.client(inputs: 1, outputs: 0)
        try client.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 9))
        client.stop()
        let captured = Array(probe.captured.prefix(8 * Self.period))
        // The first captured frame says which server frame it was; the rest follow it.
        let start = Int((captured[0] * Float(1 << 24)).rounded()) - 1
        #expect(start >= 0 && start % Self.period == 0)
        let expected = (0..<captured.count).map { ApplianceTestDriver.captureValue(start + $0) }
        #expect(captured == expected)
        #expect(client.statistics.captureXruns == 0)
    }

    @Test("duplex: one stream per direction, both exact")
    func duplex() throws {
        let rig = try ApplianceTestRig()
        let probe = Probe(capacity: 16 * Self.period, pattern: Self.ramp(4 * Self.period))
        let client = try rig.client(inputs: 1, outputs: 1)
        try client.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 8))
        let streams = rig.server.streams.snapshot()
        #expect(Set(streams.map(\.direction)) == [.playback, .capture])
        #expect(streams.allSatisfy { $0.pid == getpid() && $0.channels == 1 })
        #expect(rig.server.clients.contains { $0.name == "test-client" && $0.pid == getpid() && $0.uid == getuid() })
        client.stop()
        let start = Int((probe.captured[0] * Float(1 << 24)).rounded()) - 1
        #expect(Array(probe.captured.prefix(4 * Self.period)) == (0..<4 * Self.period).map { ApplianceTestDriver.captureValue(start + $0) })
        let mixed = rig.driver.mixedSamples(0)
        let first = try #require(mixed.firstIndex { $0 != 0 && !$0.isNaN })
        #expect(Array(mixed[first..<first + 4 * Self.period]) == Self.ramp(4 * Self.period))
    }

    @Test("setGain ramps a client's streams to the target")
    func gainRamp() throws {
        let rig = try ApplianceTestRig()
        let probe = Probe(capacity: 64 * Self.period, pattern: [Float](repeating: 0.5, count: 64 * Self.period))
        let client = try rig.client(outputs: 1)
        try client.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 3))
        let before = rig.driver.cycles.load(ordering: .acquiring)
        rig.server.streams.setGain(pid: getpid(), gain: 0.25, rampFrames: 2 * Self.period)
        #expect(rig.driver.wait(cycles: before + 6))
        let snapshot = rig.server.streams.snapshot()
        let mixed = rig.driver.mixedSamples(0)
        client.stop()
        #expect(snapshot.first?.gain == 0.25)
        #expect(snapshot.first.map { abs($0.peakDBFS - 20 * log10(0.125)) < 1e-6 } == true)
        #expect(mixed.suffix(Self.period).allSatisfy { $0 == 0.125 })
        // A ramp, not a step: values strictly between the two levels, falling.
        let between = mixed.filter { $0 > 0.125 && $0 < 0.5 }
        #expect(between.count > Self.period)
        #expect(zip(between, between.dropFirst()).allSatisfy { $0 >= $1 })
    }

    @Test("two clients are summed")
    func twoClientsSum() throws {
        let rig = try ApplianceTestRig()
        let one = Probe(capacity: 64 * Self.period, pattern: [Float](repeating: 0.25, count: 64 * Self.period))
        let two = Probe(capacity: 64 * Self.period, pattern: [Float](repeating: 0.125, count: 64 * Self.period))
        let first = try rig.client(outputs: 1, name: "one")
        let second = try rig.client(outputs: 2, name: "two")
        try first.start(IOProcedure(one))
        try second.start(IOProcedure(two))
        #expect(one.wait(cycles: 4) && two.wait(cycles: 4))
        let now = rig.driver.cycles.load(ordering: .acquiring)
        #expect(rig.driver.wait(cycles: now + 2))
        let left = rig.driver.mixedSamples(0).suffix(Self.period)
        let right = rig.driver.mixedSamples(1).suffix(Self.period)
        #expect(rig.server.streams.snapshot().count == 2)
        first.stop()
        second.stop()
        #expect(left.allSatisfy { $0 == 0.375 })
        // The stereo client's channel 1 plays −0.125 (the probe's convention); the mono one 0.25.
        #expect(right.allSatisfy { $0 == 0.125 })
    }

    @Test("a client device stopped and started again plays again")
    func restartClient() throws {
        let rig = try ApplianceTestRig()
        let client = try rig.client(outputs: 1)
        let first = Probe(capacity: 4096, pattern: [Float](repeating: 0.25, count: 1 << 20))
        try client.start(IOProcedure(first))
        #expect(first.wait(cycles: 2))
        client.stop()
        #expect(rig.server.streams.snapshot().isEmpty)
        let second = Probe(capacity: 4096, pattern: [Float](repeating: 0.5, count: 1 << 20))
        try client.start(IOProcedure(second))
        #expect(second.wait(cycles: 3))
        let now = rig.driver.cycles.load(ordering: .acquiring)
        #expect(rig.driver.wait(cycles: now + 2))
        #expect(rig.driver.mixedSamples(0).suffix(Self.period).allSatisfy { $0 == 0.5 })
        #expect(rig.server.streams.snapshot().count == 1)
        client.stop()
    }

    @Test("a client that closes frees its slot and the server is told")
    func closeFreesSlot() throws {
        let rig = try ApplianceTestRig()
        var client: ApplianceDevice? = try rig.client(inputs: 1, outputs: 1, name: "leaving")
        let probe = Probe(capacity: 4096)  // kept alive while its device runs
        try client!.start(IOProcedure(probe))
        #expect(ApplianceTestRig.eventually { rig.server.streams.snapshot().count == 2 })
        client!.stop()
        #expect(rig.server.streams.snapshot().isEmpty)
        #expect(ApplianceTestRig.eventually { rig.server.streams.retiredCount == 0 })
        client = nil  // closes the connection
        #expect(ApplianceTestRig.eventually { rig.handler.detached.withLock { $0.contains { $0.name == "leaving" } } })
        #expect(ApplianceTestRig.eventually { rig.server.clients.isEmpty })
        withExtendedLifetime(probe) {}
    }

    @Test("a client that dies without closing: its streams are detached and freed")
    func deadClient() throws {
        let rig = try ApplianceTestRig()
        let connection = try ApplianceConnection.connect(path: rig.path, name: "doomed")
        let stream = try ApplianceClientStream(connection: connection, direction: .playback, channels: 2)
        #expect(rig.server.streams.snapshot().map(\.id) == [stream.id])
        connection.close()  // as a killed process: the socket closes, nothing more
        #expect(ApplianceTestRig.eventually { rig.server.streams.snapshot().isEmpty && rig.server.streams.retiredCount == 0 })
        #expect(ApplianceTestRig.eventually { rig.handler.detached.withLock { $0.contains { $0.name == "doomed" && $0.pid == getpid() } } })
    }

    @Test("forged ring positions fault that stream only; the server and other streams carry on")
    func forgedPositions() throws {
        let rig = try ApplianceTestRig()
        let probe = Probe(capacity: 64 * Self.period, pattern: [Float](repeating: 0.25, count: 64 * Self.period))
        let honest = try rig.client(outputs: 1, name: "honest")
        try honest.start(IOProcedure(probe))
        let connection = try ApplianceConnection.connect(path: rig.path, name: "forger")
        let removed = Mutex<[ApplianceEvent]>([])
        connection.onEvent { event in removed.withLock { $0.append(event) } }
        let playback = try ApplianceClientStream(connection: connection, direction: .playback, channels: 1)
        let capture = try ApplianceClientStream(connection: connection, direction: .capture, channels: 1)
        #expect(probe.wait(cycles: 3))
        // Garbage where the positions are: far ahead of the appliance, and behind it.
        playback.ring.writePosition.pointee.store(Int.max - 3, ordering: .releasing)
        capture.ring.readPosition.pointee.store(Int.min, ordering: .releasing)
        #expect(ApplianceTestRig.eventually {
            removed.withLock { events in
                events.contains(.streamRemoved(stream: playback.id, reason: "faulted")) && events.contains(.streamRemoved(stream: capture.id, reason: "faulted"))
            }
        })
        #expect(ApplianceTestRig.eventually { rig.server.streams.snapshot().map(\.id).count == 1 })
        let now = rig.driver.cycles.load(ordering: .acquiring)
        #expect(rig.driver.wait(cycles: now + 3))
        #expect(rig.driver.mixedSamples(0).suffix(Self.period).allSatisfy { $0 == 0.25 })
        #expect(honest.takeEvents().isEmpty)
        // The server still answers.
        #expect(throws: Never.self) { try connection.request("session_status", [:]) }
        honest.stop()
        connection.close()
    }

    @Test("mixPlayback and deliverCapture allocate nothing on the appliance's I/O thread", .enabled(if: AllocationCounter.isAvailable))
    func serverCycleAllocatesNothing() throws {
        let rig = try ApplianceTestRig()
        let probe = Probe(capacity: 64 * Self.period, pattern: Self.ramp(64 * Self.period))
        let client = try rig.client(inputs: 1, outputs: 1)
        try client.start(IOProcedure(probe))
        let leaving = try rig.client(inputs: 1, outputs: 2, name: "leaving")
        let leavingProbe = Probe(capacity: 4096)  // kept alive while its device runs
        try leaving.start(IOProcedure(leavingProbe))
        let connection = try ApplianceConnection.connect(path: rig.path, name: "forger")
        let forged = try ApplianceClientStream(connection: connection, direction: .playback, channels: 1)
        #expect(probe.wait(cycles: 3))
        let now = rig.driver.cycles.load(ordering: .acquiring)
        rig.driver.countFrom = now + 2
        rig.driver.countUntil = now + 12
        // While counted: a gain ramp, a client leaving, a stream faulting.
        #expect(rig.driver.wait(cycles: now + 3))
        rig.server.streams.setGain(pid: getpid(), gain: 0.5, rampFrames: 3 * Self.period)
        leaving.stop()
        forged.ring.writePosition.pointee.store(-1, ordering: .releasing)
        #expect(rig.driver.wait(cycles: now + 13))
        client.stop()
        #expect(rig.server.streams.snapshot().isEmpty)
        #expect(rig.driver.allocations.load(ordering: .relaxed) == 0)
        connection.close()
        withExtendedLifetime(leavingProbe) {}
    }

    @Test("the client's I/O cycle allocates nothing", .enabled(if: AllocationCounter.isAvailable))
    func clientCycleAllocatesNothing() throws {
        let rig = try ApplianceTestRig()
        let probe = Probe(capacity: 64 * Self.period, pattern: Self.ramp(64 * Self.period))
        let client = try rig.client(inputs: 1, outputs: 1)
        probe.countFrom = 3
        probe.countUntil = 12
        try client.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 13))
        client.stop()
        #expect(probe.allocations.load(ordering: .relaxed) == 0)
    }
}

/// The appliance's per-stream counters, with raw streams nobody services on the client side.
@Suite("Appliance stream counters", .serialized)
struct ApplianceCounterTests {
    @Test("a playback stream nobody writes counts underruns; a capture stream nobody reads counts overruns")
    func underrunsAndOverruns() throws {
        let rig = try ApplianceTestRig()
        let connection = try ApplianceConnection.connect(path: rig.path, name: "idle")
        let playback = try ApplianceClientStream(connection: connection, direction: .playback, channels: 1)
        let capture = try ApplianceClientStream(connection: connection, direction: .capture, channels: 1)
        // One period written, then nothing more: the next cycles run short.
        playback.ring.writePosition.pointee.store(ApplianceTestRig.period, ordering: .releasing)
        let capacity = ApplianceStreamLayout.capacity(periodFrames: ApplianceTestRig.period, periods: 2)
        let now = rig.driver.cycles.load(ordering: .acquiring)
        #expect(rig.driver.wait(cycles: now + capacity / ApplianceTestRig.period + 3))
        let streams = Dictionary(uniqueKeysWithValues: rig.server.streams.snapshot().map { ($0.id, $0) })
        #expect((streams[playback.id]?.underruns ?? 0) >= 1)
        #expect(streams[playback.id]?.overruns == 0)
        #expect((streams[capture.id]?.overruns ?? 0) >= 1)
        #expect(streams[capture.id]?.faulted == false)
        // The capture ring holds the newest data it had room for, never more than its capacity.
        let written = capture.ring.writePosition.pointee.load(ordering: .acquiring)
        #expect(written == capacity)
        connection.close()
    }
}
