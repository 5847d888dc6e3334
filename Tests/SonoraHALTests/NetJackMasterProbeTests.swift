import Foundation
import SonoraCore
@testable import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import Testing

/// `NetJackMasterProbe` (`sonora devices --netjack`) against jackd's netmanager across network
/// namespaces: the master is found with what it offers, and the probe's decline leaves it free
/// at once for a real slave (unanswered, its set-up loop would hold it for 5 × 10 s).
@Suite("netjack2 master probe", .serialized, .enabled(if: NetJackRig.available, "needs root, iproute2 and jackd2 (reason printed)"))
struct NetJackMasterProbeTests {
    @Test("a master answers the probe with its rate, period and channels; declined, it takes a real slave right after")
    func findsAndDeclinesAMaster() throws {
        let rig = NetJackRig(slaves: 1)
        defer { rig.tearDown() }
        try rig.up()
        try rig.startJackMaster(rate: 48000, period: 256)
        let masters = try rig.inNamespace("\(rig.prefix)-s1") { () throws -> [NetJackMasterAdvert] in
            // The netmanager may still be starting: a few probes, each its own window.
            for _ in 0..<10 {
                let found = try NetJackMasterProbe.probe(seconds: 1)
                if !found.isEmpty { return found }
            }
            return []
        }
        #expect(masters.count == 1, "\(masters)")
        let master = try #require(masters.first)
        #expect(master.address == rig.masterAddress)
        #expect(master.sampleRate == 48000 && master.periodFrames == 256)
        // The dummy backend's 2 + 2 physical ports, offered for the probe's "as many as you have".
        #expect(master.sendChannels == 2 && master.returnChannels == 2)
        #expect(master.mtu == 1500 && master.sessionID >= 1)
        // Declined: the master gave up at once ("Slave doesn't respond") instead of waiting.
        #expect(waitFor(seconds: 5) { rig.masterLog.text.contains("Slave doesn't respond") }, "\(rig.masterLog.text.suffix(1500))")
        // And it is free for a slave now: one joins and runs within 10 s.
        let loop = LoopBack()
        let name = try NetJackDeviceName.parse("slave@\(rig.masterAddress),latency=1,name=after")
        let device = try rig.inNamespace("\(rig.prefix)-s1") { () throws -> NetJackSlaveDevice in
            let device = try NetJackSlaveDevice(name: name, configuration: AudioDeviceConfiguration(sampleRate: 48000, periodFrames: 256, inputChannels: 1, outputChannels: 1))
            try device.start(IOProcedure(loop))
            return device
        }
        defer { device.stop() }
        #expect(waitFor(seconds: 10) { loop.cycles.load(ordering: .relaxed) > 100 }, "the slave ran \(loop.cycles.load(ordering: .relaxed)) cycles after the probe")
    }

    @Test("no master: an empty list after the window; a bad group is refused by name")
    func noMasterAndBadInput() throws {
        let rig = NetJackRig(slaves: 1)
        defer { rig.tearDown() }
        try rig.up()  // the network, but no jackd
        let masters = try rig.inNamespace("\(rig.prefix)-s1") { () throws -> [NetJackMasterAdvert] in
            try NetJackMasterProbe.probe(seconds: 0.3)
        }
        #expect(masters.isEmpty)
        let bad = #expect(throws: AudioError.self) { try NetJackMasterProbe.probe(group: "225.3.19", seconds: 0.1) }
        #expect(bad?.message.contains("'225.3.19' is not an IPv4 address") == true)
        let window = #expect(throws: AudioError.self) { try NetJackMasterProbe.probe(seconds: 0) }
        #expect(window?.message.contains("out of range") == true)
    }

    @Test("the packet is netjack2's session_params_t: 644 bytes, big-endian fields at JACK2's offsets")
    func packetLayout() {
        var packet = [UInt8](repeating: 0, count: NetJackMasterProbe.packetSize)
        NetJackMasterProbe.write(&packet, packetType: .killMaster)
        NetJackMasterProbe.writeInteger(&packet, 48000, at: NetJackMasterProbe.sampleRateOffset)
        NetJackMasterProbe.writeInteger(&packet, -1, at: NetJackMasterProbe.sendAudioOffset)
        NetJackMasterProbe.writeText(&packet, String(repeating: "x", count: 100), at: NetJackMasterProbe.nameOffset, size: NetJackMasterProbe.nameSize)
        #expect(Array(packet[0..<8]) == Array("params".utf8) + [0, 0])
        #expect(Array(packet[8..<16]) == [0, 0, 0, 8, 0, 0, 0, 4])  // protocol 8, KILL_MASTER
        #expect(Array(packet[620..<624]) == [0, 0, 0xBB, 0x80])
        #expect(NetJackMasterProbe.integer(packet, at: NetJackMasterProbe.sendAudioOffset) == -1)
        // A name longer than the field keeps its terminating NUL.
        #expect(NetJackMasterProbe.text(packet, at: NetJackMasterProbe.nameOffset, size: NetJackMasterProbe.nameSize).count == 63)
        #expect(packet[NetJackMasterProbe.nameOffset + 63] == 0)
    }
}
