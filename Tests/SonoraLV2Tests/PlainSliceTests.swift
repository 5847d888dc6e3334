import SonoraCore
import SonoraTestSupport
@testable import SonoraLV2
import SonoraUnits
import Testing

/// The plain slice (`LV2RunState.isPlain`): decided when the run state is built, taken while no
/// control change is in flight and host bypass is off and not fading. It must render exactly
/// what the general slice renders, through control changes, ramps and bypass on and off.
@Suite struct PlainSliceTests {
    @Test func onlyPluginsWithoutAtomsWorkerOrControlOutputsArePlain() throws {
        let amp = try Fixtures.unit("http://lv2plug.in/plugins/eg-amp", maximumFrames: 256)
        try amp.initialize()
        #expect(amp.run?.pointee.isPlain == true)
        let eq = try Fixtures.unit("http://gareus.org/oss/lv2/fil4#stereo", maximumFrames: 256)
        try eq.initialize()
        #expect(eq.run?.pointee.isPlain == false)  // atom ports
    }

    @Test func thePlainSliceRendersWhatTheGeneralSliceRenders() throws {
        let input = Array((0..<40).map { _ in Fixtures.input[0..<256] }.joined())
        func render(plainAllowed: Bool) throws -> [Float] {
            let unit = try Fixtures.unit("http://lv2plug.in/plugins/eg-amp", maximumFrames: 256)
            let gain = try unit.parameterID(symbol: "gain")
            return try unit.renderOffline(inputs: [[input]], blockSize: 256) { block, _ throws(AudioError) in
                if block == 0 && !plainAllowed { unit.run!.pointee.isPlain = false }
                if block == 5 { try unit.setControl("gain", to: -6, bufferOffset: 100) }
                if block == 12 { try unit.rampParameter(gain, from: -6, to: 3, duration: 700, bufferOffset: 30) }
                if block == 20 { try unit.setBypass(true) }
                if block == 28 { try unit.setBypass(false) }
                if block == 33 { try unit.setControl("gain", to: -12) }
            }[0][0]
        }
        let plain = try render(plainAllowed: true)
        let general = try render(plainAllowed: false)
        #expect(plain.count == 40 * 256)
        #expect(plain == general)
        // And the changes happened: −6 dB after block 5's offset, bypassed (the input) in block 24.
        #expect(abs(plain[6 * 256] - input[6 * 256] * 0.501187) < 1e-5)
        #expect(plain[24 * 256 + 10] == input[24 * 256 + 10])
    }

    /// A stereo plain plugin (mda Delay: two inputs, two outputs) rendered into output buffers
    /// that alternate between two lists — each render finds its output ports connected elsewhere
    /// and reconnects them — and through control changes and bypass renders bit for bit what the
    /// general slice renders; and its ports are connected where each render's buffers are.
    @Test func aStereoPlainPluginFollowsMovingBuffers() throws {
        let left = Array(Fixtures.input[0..<8192])
        let right = TestSignal.whiteNoise(count: left.count, seed: 9, amplitude: 0.5)
        func render(plainAllowed: Bool) throws -> [[Float]] {
            let unit = try Fixtures.unit("http://drobilla.net/plugins/mda/Delay", maximumFrames: 256)
            let feed = LinkedInstancesTests.Feed([left, right])
            try unit.setRenderCallback(feed, input: 0)
            try unit.initialize()
            defer { unit.uninitialize() }
            #expect(unit.run!.pointee.isPlain)
            if !plainAllowed { unit.run!.pointee.isPlain = false }
            let lists = [try OwnedAudioBufferList(channelCount: 2, frameCapacity: 256), try OwnedAudioBufferList(channelCount: 2, frameCapacity: 256)]
            var result: [[Float]] = [[], []]
            for block in 0..<32 {
                if block == 6 { try unit.setControl("feedback", to: 0.3, bufferOffset: 40) }
                if block == 14 { try unit.setBypass(true) }
                if block == 20 { try unit.setBypass(false) }
                let list = lists[block % 2].list
                var flags = RenderActionFlags()
                let status = unit.render(
                    flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(block * 256)), bus: 0, frameCount: 256,
                    into: list)
                #expect(status == .noError)
                // (Block 6 renders in two slices, split at the change's offset: its last slice connects 40 frames in.)
                let channels = LV2RunState.channels(unit.run!)
                let offset = block == 6 ? 40 : 0
                #expect(channels[2].connected == UnsafeMutableRawPointer(list.samples(0) + offset))
                #expect(channels[3].connected == UnsafeMutableRawPointer(list.samples(1) + offset))
                for channel in 0..<2 { result[channel] += Array(UnsafeBufferPointer(start: list.samples(channel), count: 256)) }
            }
            return result
        }
        let plain = try render(plainAllowed: true)
        let general = try render(plainAllowed: false)
        #expect(plain[0].count == 32 * 256)
        #expect(plain == general)
        #expect(plain[0] != plain[1])
    }

    /// What the plain slice reads in its steady state sits on the run block's first two lines
    /// (the control-change words before the state, `LV2RunState.Block`), and the channel
    /// entries start a line of their own.
    @Test func whatThePlainSliceReadsIsOnTheRunBlocksFirstTwoLines() throws {
        let lineZero: [PartialKeyPath<LV2RunState>] = [
            \.handle, \.run, \.connectPort, \.seenEpoch, \.controlCopyFrames, \.isPlain, \.lastBypassed,
        ]
        for path in lineZero {
            let offset = try #require(MemoryLayout<LV2RunState>.offset(of: path)) + LV2RunState.Block.stateOffset
            #expect(offset < 64, "\(path) at byte \(offset) of the block")
        }
        let lineOne: [PartialKeyPath<LV2RunState>] = [\.inputCount, \.outputCount, \.changes]
        for path in lineOne {
            let offset = try #require(MemoryLayout<LV2RunState>.offset(of: path)) + LV2RunState.Block.stateOffset
            #expect(offset >= 64 && offset < 128, "\(path) at byte \(offset) of the block")
        }
        let bypass = try #require(MemoryLayout<LV2RunState>.offset(of: \.bypass)) + LV2RunState.Block.stateOffset
        let mix = bypass + MemoryLayout<LV2Bypass>.offset(of: \.mix)!
        #expect(mix >= 64 && mix < 128, "bypass.mix at byte \(mix) of the block")
        #expect(LV2RunState.Block.channelsOffset % 64 == 0)
        #expect(MemoryLayout<LV2RunState.Channel>.stride == 16)
        let amp = try Fixtures.unit("http://lv2plug.in/plugins/eg-amp", maximumFrames: 256)
        try amp.initialize()
        defer { amp.uninitialize() }
        #expect(UnsafeMutableRawPointer(amp.run!) == amp.runBlock + LV2RunState.Block.stateOffset)
        #expect(Int(bitPattern: amp.runBlock) % 64 == 0)
        #expect(UnsafeMutableRawPointer(amp.run!.pointee.inputs) == amp.runBlock + LV2RunState.Block.channelsOffset)
    }
}
