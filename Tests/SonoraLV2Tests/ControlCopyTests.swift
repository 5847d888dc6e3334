import Foundation
import SonoraCore
import SonoraLV2
import SonoraTestSupport
import SonoraUnits
import Testing

/// The host copies control values into the plugin's port floats only after a change is
/// announced (or bypass flips), not every render. These check that no change is missed:
/// a set after many steady renders lands on its frame, a ramp longer than a cycle is
/// followed to its end, lv2:enabled comes back after bypass, and atom inputs still carry
/// each cycle's events (and only that cycle's).
@Suite struct ControlCopyTests {
    static let ones = [Float](repeating: 1, count: 256 * 40)

    @Test func aSetAfterManySteadyRendersLandsOnItsFrame() throws {
        let unit = try Fixtures.unit("http://lv2plug.in/plugins/eg-amp", maximumFrames: 256)
        let output = try unit.renderOffline(inputs: [[Self.ones]], blockSize: 256) { block, _ throws(AudioError) in
            if block == 20 { try unit.setControl("gain", to: -20, bufferOffset: 100) }
            if block == 30 { try unit.setControl("gain", to: 0) }
        }[0][0]
        #expect(output[20 * 256 + 99] == 1)
        #expect(abs(output[20 * 256 + 100] - 0.1) < 1e-6)
        #expect(abs(output[29 * 256 + 255] - 0.1) < 1e-6)
        #expect(output[30 * 256] == 1)
    }

    @Test func aRampLongerThanACycleIsFollowedToItsEnd() throws {
        let unit = try Fixtures.unit("http://lv2plug.in/plugins/eg-amp", maximumFrames: 256)
        let start = 10 * 256 + 50
        let output = try unit.renderOffline(inputs: [[Self.ones]], blockSize: 256) { block, _ throws(AudioError) in
            if block == 10 {
                try unit.rampParameter(try unit.parameterID(symbol: "gain"), from: 0, to: -20, duration: 3000, bufferOffset: 50)
            }
        }[0][0]
        #expect(output[start - 1] == 1)
        #expect(output[start + 1000] < output[start + 10] && output[start + 2500] < output[start + 1000])
        #expect(output[start + 2500] > 0.1)
        // At and after the ramp's end: the end value, still followed many cycles later.
        #expect(abs(output[start + 3300] - 0.1) < 1e-6)
        #expect(abs(output[39 * 256] - 0.1) < 1e-6)
    }

    @Test func theEnabledPortComesBackAfterBypass() throws {
        let unit = try Fixtures.unit("http://gareus.org/oss/lv2/fil4#stereo", maximumFrames: 512)
        try unit.setControl("gain", to: -18)
        let input = Array((0..<40).map { _ in Fixtures.input[0..<512] }.joined())
        let output = try unit.renderOffline(inputs: [[input, input]], blockSize: 512) { block, _ throws(AudioError) in
            if block == 8 { try unit.setBypass(true) }
            if block == 24 { try unit.setBypass(false) }
        }[0]
        // Bypassed (after x42-eq's own fade): the input; enabled again (after its fade): −18 dB.
        let bypassed = 20 * 512..<24 * 512
        #expect(SignalMeasurement.maximumDifference([Array(output[0][bypassed])], [Array(input[bypassed])]) < 1e-4)
        let enabled = 36 * 512..<40 * 512
        let level = SignalMeasurement.rms(Array(output[0][enabled])) / SignalMeasurement.rms(Array(input[enabled]))
        #expect(abs(level - 0.126) < 0.02, "level \(level) after un-bypass")
    }

    @Test func atomInputsCarryEachCyclesEventsOnce() throws {
        // eg-midigate: audio passes while a note is held. Its atom input is emptied every cycle:
        // a note-on sent once opens the gate from its frame, a note-off closes it from its frame.
        let unit = try Fixtures.unit("http://lv2plug.in/plugins/eg-midigate", maximumFrames: 256)
        let output = try unit.renderOffline(inputs: [[Self.ones]], blockSize: 256) { block, _ throws(AudioError) in
            if block == 5 { try unit.sendMIDI([0x90, 60, 100], at: 30) }
            if block == 15 { try unit.sendMIDI([0x80, 60, 0], at: 70) }
            if block == 25 { try unit.sendMIDI([0x90, 62, 100], at: 0) }
            if block == 26 { try unit.sendMIDI([0x80, 62, 0], at: 0) }
        }[0][0]
        // Where the output switches between silence and the input (the gate's edges).
        var edges: [Int] = []
        for frame in 1..<output.count where (output[frame] == 0) != (output[frame - 1] == 0) { edges.append(frame) }
        // (This eg-midigate build opens and closes at the first frame of the event's block,
        // not at the event's frame; what is checked here is that each note arrives once.)
        #expect(output[0] == 0)
        #expect(edges.count == 4, "a note was lost or delivered again: edges at \(edges)")
        for (edge, block) in zip(edges, [5, 15, 25, 26]) {
            #expect(edge >= block * 256 && edge <= block * 256 + 70, "edge \(edge) outside block \(block)")
        }
        #expect(output[(5 * 256 + 30)..<(15 * 256)].allSatisfy { $0 == 1 })
    }

    @Test func theDryHistoryStaysAlignedAcrossItsWrap() throws {
        // nodelay reports 100 frames of latency: the host's dry history (32768 frames a
        // channel, written in block copies) must give the input 100 frames late after it wrapped.
        let unit = try Fixtures.unit("http://gareus.org/oss/lv2/nodelay", maximumFrames: 300)
        try unit.setControl("delay", to: 100)
        let noise = TestSignal.whiteNoise(count: 48000, seed: 77)
        let output = try unit.renderOffline(inputs: [[noise]], blockSize: 300) { block, _ throws(AudioError) in
            if block == 140 { try unit.setBypass(true) }
        }[0][0]
        for frame in (140 * 300 - 500)..<48000 where abs(output[frame] - noise[frame - 100]) > 1e-6 {
            Issue.record("frame \(frame): \(output[frame]), input 100 frames before \(noise[frame - 100])")
            return
        }
    }
}
