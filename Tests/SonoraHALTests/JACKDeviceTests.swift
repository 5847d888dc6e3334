import Foundation
import SonoraCore
import SonoraHALTestSupport
import SonoraTestSupport
import Synchronization
import Testing

@testable import SonoraHAL

/// `jack:` devices against a private jackd2 on the dummy backend (its own server name).
@Suite("JACK client device", .serialized, .enabled(if: JACKTestServer.isAvailable, "needs jackd2 (Debian: jackd2) and root"))
struct JACKDeviceTests {
    static let period = 256

    /// A device on `server`, its ports connected as `peer` says.
    func device(_ peer: String, on server: JACKTestServer, inputs: Int = 1, outputs: Int = 1) throws -> JACKDevice {
        let specifier = try DeviceSpecifier(parsing: "jack:\(peer)@\(server.name)")
        guard case .jack(let name) = specifier else { throw TestServerError("not a jack specifier: \(specifier)") }
        return try JACKDevice(name: name, configuration: AudioDeviceConfiguration(inputChannels: inputs, outputChannels: outputs))
    }

    @Test("a known signal through JACK's graph (out → own in) comes back bit-exact, one period later")
    func roundTripIsExact() throws {
        let server = try JACKTestServer(period: Self.period)
        let device = try device("self", on: server)
        #expect(device.format.periodFrames == Self.period)
        #expect(device.format.sampleRate == 48000)
        var generator = SeededGenerator(seed: 23)
        let pattern = (0..<4000).map { _ in Float(Int.random(in: -32767...32767, using: &generator)) / 32768 }
        let probe = Probe(capacity: 48000, pattern: pattern, patternStart: 1000)
        try device.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 40))
        device.stop()
        let roundTrip = try #require(probe.measuredRoundTrip())
        #expect(roundTrip == Self.period, "JACK delays a feedback connection by exactly one period")
        #expect(roundTrip == device.format.roundTripFrames)
        #expect(probe.captureMatchesPattern(roundTrip: roundTrip))
        #expect(device.statistics.cycles >= 40)
    }

    @Test("the process callback makes no heap call", .enabled(if: AllocationCounter.isAvailable))
    func processCallbackAllocatesNothing() throws {
        let server = try JACKTestServer(period: Self.period)
        let device = try device("self", on: server, inputs: 2, outputs: 2)
        let probe = Probe(capacity: 48000, pattern: [0.5, -0.25, 0.125], patternStart: 512)
        probe.countFrom = 20
        probe.countUntil = 120
        try device.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 125))
        device.stop()
        #expect(probe.allocations.load(ordering: .relaxed) == 0)
    }

    @Test("latency ranges pass through Sonora's ports and read back (dummy: capture 1 period, playback 2)")
    func latencyIsReportedAndReadBack() throws {
        let server = try JACKTestServer(period: Self.period)
        let device = try device("system", on: server, inputs: 2, outputs: 2)
        let probe = Probe(capacity: 1024)
        try device.start(IOProcedure(probe))
        defer {
            device.stop()
            withExtendedLifetime(probe) {}
        }
        // The server's latency pass runs after the connections; give it a few polls.
        var latency = device.portLatency
        for _ in 0..<100 where latency.playback.lowerBound == 0 || latency.capture.lowerBound == 0 {
            usleep(20_000)
            latency = device.portLatency
        }
        #expect(latency.capture == Self.period...Self.period)
        #expect(latency.playback == 2 * Self.period...2 * Self.period)
        // What Sonora reported to JACK for its own ports (its latency callback).
        let listing = server.tool("jack_lsp", ["-l", device.clientName])
        #expect(listing.contains("\(device.clientName):out_1\n\tport playback latency = [ 512 512 ] frames\n\tport capture latency = [ 256 256 ] frames"), "\(listing)")
        #expect(listing.contains("\(device.clientName):in_1\n\tport playback latency = [ 512 512 ] frames\n\tport capture latency = [ 256 256 ] frames"), "\(listing)")
        #expect(device.format.roundTripFrames == 4 * Self.period)
    }

    @Test("the server killed and restarted mid-run: an interruption, then recovery, and cycles go on")
    func serverRestartIsAnInterruptionAndRecovery() throws {
        let server = try JACKTestServer(period: Self.period)
        let device = try device("self", on: server)
        let probe = Probe(capacity: 48000)
        try device.start(IOProcedure(probe))
        defer { device.stop() }
        #expect(probe.wait(cycles: 20))
        server.kill()
        var events: [DeviceEvent] = []
        func waitFor(_ match: (DeviceEvent) -> Bool) -> Bool {
            for _ in 0..<500 {
                events += device.takeEvents()
                if events.contains(where: match) { return true }
                usleep(20_000)
            }
            return false
        }
        #expect(waitFor { if case .interruptionBegan = $0 { true } else { false } }, "\(events)")
        let before = probe.cycles.load(ordering: .acquiring)
        try server.start()
        #expect(waitFor { if case .interruptionEnded = $0 { true } else { false } }, "\(events)")
        #expect(probe.wait(cycles: before + 20))
        #expect(device.statistics.interruptions == 1)
    }

    @Test("xruns JACK reports are counted as playback xruns and posted")
    func xrunsAreCounted() throws {
        let server = try JACKTestServer(period: Self.period)
        let device = try device("self", on: server)
        let probe = Probe(capacity: 48000)
        probe.stallCycle = 20
        probe.stallMicroseconds = 700_000
        try device.start(IOProcedure(probe))
        defer { device.stop() }
        #expect(probe.wait(cycles: 60))
        var events = device.takeEvents()
        for _ in 0..<100 where !events.contains(where: { if case .xrun = $0 { true } else { false } }) {
            usleep(20_000)
            events += device.takeEvents()
        }
        #expect(device.statistics.playbackXruns >= 1)
        #expect(events.contains { if case .xrun(.playback, _, _) = $0 { true } else { false } }, "\(events)")
    }

    @Test("a new buffer size is followed: the engine is re-made at the server's period, a format change is posted")
    func bufferSizeChangeIsFollowed() throws {
        let server = try JACKTestServer(period: Self.period)
        let device = try device("self", on: server)
        let probe = Probe(capacity: 1 << 20)
        try device.start(IOProcedure(probe))
        defer { device.stop() }
        #expect(probe.wait(cycles: 10))
        _ = server.tool("jack_bufsize", ["512"])
        var events: [DeviceEvent] = []
        for _ in 0..<250 where device.format.periodFrames != 512 {
            usleep(20_000)
            events += device.takeEvents()
        }
        #expect(device.format.periodFrames == 512)
        let cycles = probe.cycles.load(ordering: .acquiring)
        #expect(probe.wait(cycles: cycles + 10))
        events += device.takeEvents()
        // A format change, not an interruption.
        #expect(events.contains(.formatChanged(sampleRate: 48000, periodFrames: 512)), "\(events)")
        #expect(device.statistics.interruptions == 0)
    }

    @Test("no server: a clear error naming the server")
    func noServerIsAClearError() throws {
        #expect {
            _ = try JACKDevice(name: JACKDeviceName(peer: .none, server: "sonora-test-absent-\(getpid())"), configuration: AudioDeviceConfiguration())
        } throws: { error in
            (error as? AudioError)?.message.contains("no JACK server 'sonora-test-absent-") == true
        }
    }
}
