import SonoraCore
import SonoraLV2
import Testing

/// time:Position from the host's transport: eg-metro clicks only while the transport rolls.
@Suite struct TransportTests {
    @Test func metronomeFollowsTheTransport() throws {
        let unit = try Fixtures.unit("http://lv2plug.in/plugins/eg-metro", maximumFrames: 512)
        #expect(unit.takesTransport)
        let stopped = try unit.renderOffline(inputs: [], frameCount: 48000, blockSize: 512)[0][0]
        #expect(stopped.allSatisfy { $0 == 0 })
        let rolling = try unit.renderOffline(inputs: [], frameCount: 48000, blockSize: 512) { block, start throws(AudioError) in
            if block == 0 { try unit.sendTransport(LV2Transport(frame: 0, speed: 1, beatsPerMinute: 120)) }
        }[0][0]
        // 120 BPM: a click starts every 24,000 frames.
        #expect(rolling[0..<2000].contains { $0 != 0 })
        #expect(rolling[24000..<26000].contains { $0 != 0 })
        #expect(rolling[20000..<24000].allSatisfy { $0 == 0 }, "silence between clicks")
        let amp = try Fixtures.unit("http://lv2plug.in/plugins/eg-amp")
        #expect(throws: AudioError.self) { try amp.sendTransport(LV2Transport()) }
    }
}
