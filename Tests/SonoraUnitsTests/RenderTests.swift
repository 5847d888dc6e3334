import Foundation
import SonoraCore
import SonoraDSP
import Testing
@testable import SonoraUnits

@Suite("Rendering")
struct RenderTests {
    @Test func parameterChangesLandOnTheExactFrame() throws {
        let gain = GainUnit()
        let source = ConstantSource(1)
        try gain.setRenderCallback(source, input: 0)
        try gain.initialize()
        _ = try renderFrames(gain, frames: 64)
        try gain.setParameter(GainUnit.Parameter.mute, to: 1, bufferOffset: 37)
        let out = try renderFrames(gain, frames: 64, sampleTime: 64)
        #expect(out[0][36] == 1 && out[0][37] == 0 && out[1][36] == 1 && out[1][37] == 0)
        #expect(out[0][..<37].allSatisfy { $0 == 1 } && out[0][37...].allSatisfy { $0 == 0 })
        // Two events in one cycle, in either order of sending.
        try gain.setParameter(GainUnit.Parameter.mute, to: 1, bufferOffset: 50)
        try gain.setParameter(GainUnit.Parameter.mute, to: 0, bufferOffset: 10)
        let both = try renderFrames(gain, frames: 64, sampleTime: 128)
        #expect(both[0][9] == 0 && both[0][10] == 1 && both[0][49] == 1 && both[0][50] == 0)
    }

    @Test func rampsFollowTheLineExactly() throws {
        let mixer = MultiChannelMixerUnit(inputs: 1)
        let source = ConstantSource(1)
        try mixer.setRenderCallback(source, input: 0)
        try mixer.setParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 0, to: 0)
        try mixer.initialize()
        try mixer.rampParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 0, from: 0, to: 1, duration: 100, bufferOffset: 10)
        var out = try renderFrames(mixer, frames: 64)
        out[0] += try renderFrames(mixer, frames: 64, sampleTime: 64)[0]
        #expect(out[0][..<10].allSatisfy { $0 == 0 })
        for frame in 10..<110 {
            #expect(out[0][frame] == Float(frame - 10) / 100, "frame \(frame)")
        }
        #expect(out[0][110...].allSatisfy { $0 == 1 })
    }

    @Test func gainRampInDecibelsIsPerSample() throws {
        let gain = GainUnit()
        try gain.setRenderCallback(ConstantSource(1), input: 0)
        try gain.initialize()
        try gain.rampParameter(GainUnit.Parameter.gain, from: 0, to: -20, duration: 200)
        let out = try renderFrames(gain, frames: 256)[0]
        for frame in [0, 1, 50, 100, 199] {
            let expected = Decibels.toLinear(-20 * Float(frame) / 200)
            #expect(abs(out[frame] - expected) < 1e-6, "frame \(frame)")
        }
        #expect(abs(out[255] - 0.1) < 1e-6)
    }

    @Test func mixerSumsWithVolumesAndPanLaws() throws {
        let mixer = MultiChannelMixerUnit(inputs: 3)
        try mixer.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .input, element: 2)
        try mixer.setRenderCallback(ConstantSource(0.5), input: 0)
        try mixer.setRenderCallback(ConstantSource(0.25), input: 1)
        try mixer.setRenderCallback(ConstantSource(1), input: 2)
        try mixer.setParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 1, to: 0.5)
        try mixer.setParameter(MultiChannelMixerUnit.Parameter.pan, scope: .input, element: 2, to: -1)
        try mixer.initialize()
        var out = try renderFrames(mixer, frames: 32)
        // Left: 0.5 + 0.25·0.5 + mono hard left (cos 0 = 1). Right: 0.5 + 0.125 + 0.
        #expect(abs(out[0][5] - 1.625) < 1e-6)
        #expect(abs(out[1][5] - 0.625) < 1e-6)

        try mixer.setParameter(MultiChannelMixerUnit.Parameter.pan, scope: .input, element: 2, to: 0)
        try mixer.setParameter(MultiChannelMixerUnit.Parameter.enable, scope: .input, element: 0, to: 0)
        try mixer.setParameter(MultiChannelMixerUnit.Parameter.volume, scope: .output, element: 0, to: 0.5)
        out = try renderFrames(mixer, frames: 32, sampleTime: 32)
        let centre = Float(cos(Double.pi / 4))  // equal-power centre, -3 dB
        #expect(abs(out[0][3] - (0.125 + centre) * 0.5) < 1e-6)
        #expect(abs(out[1][3] - (0.125 + centre) * 0.5) < 1e-6)

        // A stereo input panned right is a balance: left turned down, right untouched.
        try mixer.setParameter(MultiChannelMixerUnit.Parameter.pan, scope: .input, element: 1, to: 0.5)
        out = try renderFrames(mixer, frames: 32, sampleTime: 64)
        #expect(abs(out[0][3] - (0.125 * 0.5 + centre) * 0.5) < 1e-6)
        #expect(abs(out[1][3] - (0.125 + centre) * 0.5) < 1e-6)
    }

    @Test func mixerMetersMatchHandComputedPower() throws {
        let mixer = MultiChannelMixerUnit(inputs: 1)
        try mixer.setRenderCallback(ConstantSource(0.5), input: 0)
        try mixer.setParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 0, to: 0.5)
        try mixer.setProperty(.meteringMode, scope: .input, element: 0, to: .flag(true))
        try mixer.setProperty(.meteringMode, scope: .output, element: 0, to: .flag(true))
        try mixer.initialize()
        _ = try renderFrames(mixer, frames: 480)
        // One block: mean square 0.25 smoothed once with a 0.3 s time constant.
        let blockWeight = 1 - exp(-480.0 / (0.3 * 48000))
        let preAverage = try mixer.parameter(MultiChannelMixerUnit.Parameter.preAveragePower, scope: .input, element: 0)
        #expect(abs(Double(preAverage) - 10 * log10(0.25 * blockWeight)) < 0.01)
        let prePeak = try mixer.parameter(MultiChannelMixerUnit.Parameter.prePeakHoldLevel, scope: .input, element: 0)
        #expect(abs(prePeak - 20 * log10(0.5)) < 0.01)
        let postPeak = try mixer.parameter(MultiChannelMixerUnit.Parameter.postPeakHoldLevel, scope: .input, element: 0)
        #expect(abs(postPeak - 20 * log10(0.25)) < 0.01)
        // Steady state after two seconds: the average converges on the signal's power.
        for cycle in 1...200 { _ = try renderFrames(mixer, frames: 480, sampleTime: Double(cycle * 480)) }
        let settled = try mixer.parameter(MultiChannelMixerUnit.Parameter.postAveragePower, scope: .output, element: 0)
        #expect(abs(settled - 20 * log10(0.25)) < 0.01)
    }

    @Test func connectionsPullAndOfflineRenderIsDeterministic() throws {
        func render() throws -> [[Float]] {
            let generator = ToneGeneratorUnit()
            let gain = GainUnit()
            let output = GenericOutputUnit()
            try generator.setParameter(ToneGeneratorUnit.Parameter.frequency, to: 1000)
            try generator.setParameter(ToneGeneratorUnit.Parameter.level, to: 0)
            try gain.setParameter(GainUnit.Parameter.gain, to: -6)
            try gain.connect(input: 0, from: generator, bus: 0)
            try output.connect(input: 0, from: gain, bus: 0)
            for unit in [generator, gain, output] as [AudioUnit] { try unit.initialize() }
            return try output.renderOffline(frameCount: 48000, sliceFrames: 500)
        }
        let first = try render()
        let second = try render()
        #expect(first == second)
        let peak = first[0].map(abs).max() ?? 0
        #expect(abs(peak - Decibels.toLinear(-6)) < 1e-3)
        // 1 kHz for one second: 2000 sign changes.
        let crossings = zip(first[0], first[0].dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
        #expect(abs(crossings - 2000) <= 2)
        #expect(first[1] == first[0])
    }

    @Test func renderErrorsAreStatusesNotCrashes() throws {
        let gain = GainUnit()
        #expect(throws: AudioError.self) { _ = try renderFrames(gain, frames: 16) }
        try gain.setMaximumFramesPerSlice(256)
        try gain.initialize()
        // No source on the effect's input.
        let missing = #expect(throws: AudioError.self) { _ = try renderFrames(gain, frames: 16) }
        #expect(missing?.code == .noConnection)
        #expect(gain.lastRenderError == .noConnection)
        try gain.setRenderCallback(ConstantSource(1), input: 0)
        let tooMany = #expect(throws: AudioError.self) { _ = try renderFrames(gain, frames: 257) }
        #expect(tooMany?.code == .tooManyFramesToProcess)
        let badBuffers = #expect(throws: AudioError.self) { _ = try renderFrames(gain, frames: 16, channels: 3) }
        #expect(badBuffers?.code == .parameterError)
        let wrongBus = #expect(throws: AudioError.self) { _ = try renderFrames(gain, frames: 16, bus: 1) }
        #expect(wrongBus?.code == .invalidElement)
        #expect(try renderFrames(gain, frames: 16)[0][0] == 1)
    }

    @Test func connectionsCheckTheirEnds() throws {
        let mono = ToneGeneratorUnit()
        try mono.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .output, element: 0)
        let gain = GainUnit()
        let code = AudioError.Code.of
        #expect(code { try gain.connect(input: 0, from: mono, bus: 0) } == .formatNotSupported)
        #expect(code { try gain.connect(input: 0, from: ToneGeneratorUnit(), bus: 3) } == .invalidElement)
        #expect(code { try gain.connect(input: 2, from: ToneGeneratorUnit(), bus: 0) } == .invalidElement)
        #expect(code { try gain.connect(input: 0, from: gain, bus: 0) } == .invalidPropertyValue)
    }

    @Test func splitterPullsItsInputOncePerCycle() throws {
        let splitter = SplitterUnit(outputs: 3)
        let source = ConstantSource(0, counting: true)
        try splitter.setRenderCallback(source, input: 0)
        try splitter.initialize()
        let a = try renderFrames(splitter, frames: 16, bus: 0)
        let b = try renderFrames(splitter, frames: 16, bus: 2)
        #expect(source.calls == 1)
        #expect(a == b && a[0][5] == 5)
        _ = try renderFrames(splitter, frames: 16, bus: 1, sampleTime: 16)
        #expect(source.calls == 2)
    }

    @Test func mergerStacksChannels() throws {
        let merger = MergerUnit(inputs: 2)
        try merger.setRenderCallback(ConstantSource(0.25), input: 0)
        try merger.setRenderCallback(ConstantSource(0.75), input: 1)
        try merger.initialize()
        let out = try renderFrames(merger, frames: 8)
        #expect(out[0].allSatisfy { $0 == 0.25 } && out[1].allSatisfy { $0 == 0.75 })
    }

    @Test func sampleDelayDelaysExactlyAndResets() throws {
        let delay = SampleDelayUnit()
        let source = ConstantSource(0, counting: true)
        try delay.setRenderCallback(source, input: 0)
        try delay.setParameter(SampleDelayUnit.Parameter.delayFrames, to: 100)
        try delay.initialize()
        #expect(abs(delay.latency - 100.0 / 48000) < 1e-12)
        var out: [Float] = []
        for cycle in 0..<4 { out += try renderFrames(delay, frames: 64, sampleTime: Double(cycle * 64))[0] }
        #expect(out[..<100].allSatisfy { $0 == 0 })
        #expect(out[100] == 0 && out[101] == 1 && out[255] == 155)
        delay.reset()
        let afterReset = try renderFrames(delay, frames: 64, sampleTime: 256)[0]
        #expect(afterReset.allSatisfy { $0 == 0 })
    }

    @Test func bypassPassesInputThrough() throws {
        let gain = GainUnit()
        try gain.setRenderCallback(ConstantSource(0.5), input: 0)
        try gain.setParameter(GainUnit.Parameter.mute, to: 1)
        try gain.initialize()
        #expect(try renderFrames(gain, frames: 8)[0][0] == 0)
        try gain.setBypass(true)
        #expect(try renderFrames(gain, frames: 8, sampleTime: 8)[0][0] == 0.5)
        #expect(AudioError.Code.of { try MultiChannelMixerUnit().setBypass(true) } == .invalidProperty)
    }

    @Test func replacedCallbackTargetsLiveUntilTheRealtimeSideLetsGo() throws {
        let gain = GainUnit()
        weak var firstTarget: ConstantSource?
        do {
            let first = ConstantSource(1)
            firstTarget = first
            try gain.setRenderCallback(first, input: 0)
        }
        try gain.initialize()
        #expect(try renderFrames(gain, frames: 8)[0][0] == 1)
        try gain.setRenderCallback(ConstantSource(2), input: 0)
        #expect(firstTarget != nil)  // the realtime side has not yet taken the change
        #expect(try renderFrames(gain, frames: 8, sampleTime: 8)[0][0] == 2)
        try gain.setParameter(GainUnit.Parameter.gain, to: 0)  // any later control call frees what was retired
        #expect(firstTarget == nil)
    }

    @Test func renderNotificationsSeeEveryRender() throws {
        final class Counter: RenderCallbackTarget {
            var pre = 0
            var post = 0
            override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
                if request.pointee.flags.contains(.preRender) { pre += 1 }
                if request.pointee.flags.contains(.postRender) { post += 1 }
                return .noError
            }
        }
        let gain = GainUnit()
        let counter = Counter()
        try gain.setRenderCallback(ConstantSource(1), input: 0)
        try gain.addRenderNotify(RenderCallback(counter), keeping: counter)
        try gain.initialize()
        for cycle in 0..<3 { _ = try renderFrames(gain, frames: 8, sampleTime: Double(cycle * 8)) }
        #expect(counter.pre == 3 && counter.post == 3)
    }
}

@Suite("Gain pan")
struct GainPanTests {
    @Test func panIsABalanceOnStereo() throws {
        let gain = GainUnit()
        try gain.setRenderCallback(ConstantSource(0.5), input: 0)
        try gain.setParameter(GainUnit.Parameter.pan, to: 0.5)
        try gain.initialize()
        let out = try renderFrames(gain, frames: 8)
        #expect(out[0][0] == 0.25 && out[1][0] == 0.5)
        try gain.setParameter(GainUnit.Parameter.pan, to: -1)
        let left = try renderFrames(gain, frames: 8, sampleTime: 8)
        #expect(left[0][0] == 0.5 && left[1][0] == 0)
    }
}
