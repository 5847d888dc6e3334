import Foundation
import SonoraCore
import SonoraHAL
import SonoraTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Two Sonora slaves of one jackd master (netmanager) play sample-aligned: each plays its
/// own frame counter, and the master routes each slave's output into the other's input
/// (`scripts/netjack-netns.sh master … cross`). What a slave hears is the other's counter:
/// the difference between its own frame count and the counter value it hears is the
/// other's offset in cycles plus the path's latency. Data only, no clock: if both slaves
/// run one cycle per master cycle, both differences stay constant for the whole run, are
/// whole periods, and their sum is the two paths' latency alone (the offsets cancel).
@Suite("Two netjack2 slaves of one master", .serialized, .enabled(if: NetJackRig.available, "needs root, iproute2 and jackd2 (reason printed)"))
struct NetJackAlignmentTests {
    static let rate = 48000
    static let period = 256
    static let latency = 1

    /// Plays 1, 2, 3 … (its own frames played, plus one: 0 stays silence) on channel 0 and
    /// keeps channel 0 of its capture; both counts advance by a period each cycle.
    final class CounterProbe: IOCycleTarget, @unchecked Sendable {
        let captured: UnsafeMutableBufferPointer<Float>
        private var frames = 0
        let cycles = Atomic<Int>(0)
        init(capacity: Int) {
            captured = .allocate(capacity: capacity)
            captured.initialize(repeating: 0)
        }
        deinit { captured.deallocate() }

        override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
            let count = cycle.pointee.frameCount
            if cycle.pointee.input.channelCount > 0 && frames + count <= captured.count {
                (captured.baseAddress! + frames).update(from: cycle.pointee.input.samples(0), count: count)
            }
            let output = cycle.pointee.output
            for channel in 0..<output.channelCount {
                for frame in 0..<count { output.samples(channel)[frame] = channel == 0 ? Float(frames + frame + 1) : 0 }
            }
            frames += count
            cycles.add(1, ordering: .releasing)
            return 0
        }

        /// Own frame index minus the other's frame index heard there, over every sample that
        /// carries the other's counter (the lag in frames), and how many such samples there were.
        func lags(upTo frames: Int) -> (lags: Set<Int>, samples: Int) {
            var lags: Set<Int> = []
            var samples = 0
            for index in 0..<min(frames, captured.count) where captured[index] > 0 {
                lags.insert(index - (Int(captured[index]) - 1))
                samples += 1
            }
            return (lags, samples)
        }
    }

    @Test("each slave hears the other at a constant lag of whole periods; the two lags sum to the paths' latency alone")
    func twoSlavesAreSampleAligned() throws {
        let rig = NetJackRig(slaves: 2)
        defer { rig.tearDown() }
        try rig.up()
        try rig.startJackMaster(rate: Self.rate, period: Self.period, crossed: true)
        let seconds = 10
        let capacity = Self.rate * (seconds + 40)
        let probes = [CounterProbe(capacity: capacity), CounterProbe(capacity: capacity)]
        var devices: [NetJackSlaveDevice] = []
        defer { devices.forEach { $0.stop() } }
        for (index, probe) in probes.enumerated() {
            let name = try NetJackDeviceName.parse("slave@\(rig.masterAddress),latency=\(Self.latency),name=align\(index == 0 ? "a" : "b")")
            devices.append(try rig.inNamespace("\(rig.prefix)-s\(index + 1)") { () throws -> NetJackSlaveDevice in
                let device = try NetJackSlaveDevice(name: name, configuration: AudioDeviceConfiguration(sampleRate: Self.rate, periodFrames: Self.period, inputChannels: 1, outputChannels: 1))
                try device.start(IOProcedure(probe))
                return device
            })
        }
        #expect(rig.waitForCrossings(2), "\(rig.masterLog.text)")
        // Both slaves hear each other for `seconds` from here on.
        let start = probes.map { $0.cycles.load(ordering: .acquiring) }
        let cycles = seconds * Self.rate / Self.period
        for (probe, first) in zip(probes, start) {
            #expect(waitFor(seconds: Double(seconds) * 3) { probe.cycles.load(ordering: .acquiring) >= first + cycles })
        }
        devices.forEach { $0.stop() }
        let ran = probes.map { $0.cycles.load(ordering: .acquiring) * Self.period }
        let heardByA = probes[0].lags(upTo: ran[0]), heardByB = probes[1].lags(upTo: ran[1])
        // Each heard the other for (nearly) the whole run, and at one lag only: no cycle of
        // either was skipped, repeated or shifted against the other's.
        #expect(heardByA.samples >= (cycles - 10) * Self.period && heardByB.samples >= (cycles - 10) * Self.period, "samples heard: A \(heardByA.samples), B \(heardByB.samples)")
        #expect(heardByA.lags.count == 1 && heardByB.lags.count == 1, "lags A \(heardByA.lags.sorted().prefix(8)), B \(heardByB.lags.sorted().prefix(8))")
        let lagA = try #require(heardByA.lags.first), lagB = try #require(heardByB.lags.first)
        // Whole periods: both slaves' cycles start on the same master cycle boundaries.
        #expect(lagA % Self.period == 0 && lagB % Self.period == 0, "lags \(lagA), \(lagB)")
        // The offsets cancel: A → master → B and B → master → A take `latency` periods each
        // over the network, plus one period where jackd breaks the A ⇄ B cycle of its graph
        // (a feedback connection is delayed by a period): nothing else between the slaves.
        #expect(lagA + lagB == (2 * Self.latency + 1) * Self.period, "lags \(lagA) + \(lagB) frames")
        // (lagA − lagB) / 2 is how many frames slave a started before slave b, ± half the
        // feedback period (which direction jackd delays is not in the data).
        print("NetJackAlignmentTests: lags \(lagA) and \(lagB) frames (sum \((lagA + lagB) / Self.period) periods); a started \(Double(lagA - lagB) / 2 / Double(Self.period)) ± 0.5 periods before b; samples heard A \(heardByA.samples), B \(heardByB.samples)")
        for device in devices {
            #expect(device.statistics.interruptions == 0)
            #expect(device.lostCycles == 0)
            #expect(device.packetErrors == 0)
        }
    }
}
