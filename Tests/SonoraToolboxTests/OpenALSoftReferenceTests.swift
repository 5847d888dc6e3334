import Foundation
import SonoraPositionalTestSupport
import SonoraTestSupport
import Testing

/// Shared shapes of the comparison scenes: one steady 1 kHz mono source, set up, played and
/// rendered long enough that every gain ramp has settled; the level is read on the last
/// 100 ms (a whole number of cycles), the pitch on the last 500 ms.
enum ToneScene {
    static let hertz = 1000.0
    static let frequency = 48_000
    static let amplitude: Float = 0.25
    /// 100 cycles of 1 kHz: the tone loops without a seam.
    static let tone = SceneBuffer.tone(hertz: hertz, frames: 4_800, amplitude: amplitude)
    static let settleFrames = 9_600
    static let levelFrames = 4_800
    static let pitchFrames = 24_000

    /// One looping tone source after `changes`, rendered for settle + measure frames.
    static func scene(hrtf: Bool = false, measuring frames: Int = levelFrames, _ changes: [SceneChange]) -> PositionalScene {
        var scene = PositionalScene(frequency: frequency, hrtf: hrtf, buffers: [tone], sourceCount: 1)
        scene.steps.append(SceneStep(changes: [.buffer(source: 0, buffer: 0), .looping(source: 0, true)] + changes + [.play([0])], frames: settleFrames))
        scene.step(frames)
        return scene
    }

    /// The rendered amplitude of the tone per channel, over the scene's last step, as a
    /// gain relative to the buffer's amplitude.
    static func gains(_ rendering: SceneRendering, of scene: PositionalScene) -> (left: Double, right: Double) {
        let window = rendering.frames(ofStep: scene.steps.count - 1, in: scene)
        let left = SignalMeasurement.amplitude(of: window.left, frequency: hertz, sampleRate: Double(frequency))
        let right = SignalMeasurement.amplitude(of: window.right, frequency: hertz, sampleRate: Double(frequency))
        return (left / Double(amplitude), right / Double(amplitude))
    }

    /// Both channels' power together: a level that a pan law does not change for a fixed direction.
    static func level(_ rendering: SceneRendering, of scene: PositionalScene) -> Double {
        let gains = gains(rendering, of: scene)
        return (gains.left * gains.left + gains.right * gains.right).squareRoot()
    }

    /// The frequency of the left channel over the last step (zero crossings).
    static func pitch(_ rendering: SceneRendering, of scene: PositionalScene) -> Double {
        let window = rendering.frames(ofStep: scene.steps.count - 1, in: scene)
        return SignalMeasurement.frequency(of: Array(window.left), sampleRate: Double(frequency))
    }

    static func decibels(_ gain: Double) -> Double { 20 * log10(max(gain, 1e-12)) }
}

/// The comparison cases (one list, used against OpenAL Soft alone and against Sonora).
enum ComparisonCases {
    struct Distance: CustomTestStringConvertible, Sendable {
        var model: SceneDistanceModel
        var distance: Float
        var reference: Float = 1
        var maximum: Float = 10
        var rolloff: Float = 1
        var testDescription: String { "\(model) d=\(distance) ref=\(reference) max=\(maximum) rolloff=\(rolloff)" }
        var expected: Float {
            min(1, OpenAL11Formulas.distanceGain(model, distance: distance, reference: reference, maximum: maximum, rolloff: rolloff))
        }
    }

    /// Every model, clamped and not, inside, at, beyond the reference and beyond the maximum
    /// (except the linear model unclamped there, which is silent: no level to compare in dB).
    static let distances: [Distance] = SceneDistanceModel.allCases.flatMap { model in
        [Distance(model: model, distance: 0.5), Distance(model: model, distance: 2), Distance(model: model, distance: 6, rolloff: 0.5),
         Distance(model: model, distance: 7, reference: 2, maximum: 20, rolloff: 2), Distance(model: model, distance: 15)]
            .filter { !($0.model == .linear && $0.distance > $0.maximum) }
    }

    static func changes(_ c: Distance) -> [SceneChange] {
        [.distanceModel(c.model), .position(source: 0, [0, 0, -c.distance]),
         .distances(source: 0, reference: c.reference, maximum: c.maximum, rolloff: c.rolloff)]
    }

    struct Cone: CustomTestStringConvertible, Sendable {
        var angle: Float  // degrees between the source's direction and the listener
        var inner: Float = 60
        var outer: Float = 180
        var outerGain: Float = 0.25
        var testDescription: String { "listener \(angle)° off a cone \(inner)°/\(outer)° outer gain \(outerGain)" }
        var expected: Float { OpenAL11Formulas.coneGain(angle: angle, inner: inner, outer: outer, outerGain: outerGain) }
    }

    static let cones: [Cone] = [0, 20, 45, 60, 75, 120, 180].map { Cone(angle: $0) } + [Cone(angle: 50, inner: 90, outer: 100, outerGain: 0.1)]

    /// The source 2 m in front of the listener, pointing `angle` degrees away from it (in the
    /// horizontal plane); no distance attenuation, so only the cone acts.
    static func changes(_ c: Cone) -> [SceneChange] {
        let radians = Double(c.angle) * .pi / 180
        return [.distanceModel(.none), .position(source: 0, [0, 0, -2]),
                .direction(source: 0, [Float(sin(radians)), 0, Float(cos(radians))]),
                .cone(source: 0, inner: c.inner, outer: c.outer, outerGain: c.outerGain)]
    }

    struct Doppler: CustomTestStringConvertible, Sendable {
        var sourceVelocity: SIMD3<Float>
        var listenerVelocity: SIMD3<Float> = .zero
        var factor: Float = 1
        var speed: Float = 343.3
        var testDescription: String { "source v=\(sourceVelocity) listener v=\(listenerVelocity) factor \(factor) speed \(speed)" }
        static let position: SIMD3<Float> = [3, 0, -4]
        var expected: Double {
            OpenAL11Formulas.dopplerRatio(sourcePosition: Self.position, sourceVelocity: sourceVelocity,
                                          listenerVelocity: listenerVelocity, dopplerFactor: factor, speedOfSound: speed)
        }
    }

    static let dopplers: [Doppler] = [
        Doppler(sourceVelocity: [-6, 0, 8]),                 // 10 m/s straight at the listener
        Doppler(sourceVelocity: [6, 0, -8]),                 // and away
        Doppler(sourceVelocity: [0, 0, 0], listenerVelocity: [3, 0, -4]),
        Doppler(sourceVelocity: [-12, 0, 16], factor: 0.5),
        Doppler(sourceVelocity: [-6, 0, 8], speed: 150),
        Doppler(sourceVelocity: [4, 3, 3]),                  // partly across the line
    ]

    static func changes(_ c: Doppler) -> [SceneChange] {
        [.distanceModel(.none), .dopplerFactor(c.factor), .speedOfSound(c.speed), .position(source: 0, Doppler.position),
         .velocity(source: 0, c.sourceVelocity), .listenerVelocity(c.listenerVelocity)]
    }

    static let pitches: [Float] = [0.5, 0.8, 1.25, 1.5, 2]
}

/// OpenAL Soft alone against OpenAL 1.1's formulas: proves the measurement method (a level
/// read on a steady tone, a pitch read by zero crossings) before Sonora is held to it.
@Suite("OpenAL Soft against OpenAL 1.1's formulas")
struct OpenALSoftReferenceTests {
    func render(_ scene: PositionalScene) throws -> SceneRendering {
        try scene.render(on: try OpenALSoftEngine(for: scene))
    }

    @Test func theLoopbackIsOpenALSoft119WithHRTFOffAndALinearResampler() throws {
        let engine = try OpenALSoftEngine()
        #expect(engine.loopback.version.contains("ALSOFT 1.19"))
        #expect(!engine.loopback.isHRTFActive)
        #expect(engine.loopback.defaultResamplerName.lowercased().contains("linear"))
        #expect(try OpenALSoftEngine(hrtf: true).loopback.isHRTFActive)
    }

    @Test(arguments: ComparisonCases.distances)
    func distanceGainIsTheSpecFormula(_ c: ComparisonCases.Distance) throws {
        let attenuated = ToneScene.scene(ComparisonCases.changes(c))
        var plain = c
        plain.model = .none
        let reference = ToneScene.scene(ComparisonCases.changes(plain))
        let gain = ToneScene.level(try render(attenuated), of: attenuated) / ToneScene.level(try render(reference), of: reference)
        #expect(abs(ToneScene.decibels(gain) - ToneScene.decibels(Double(c.expected))) < 0.1, "measured \(gain), formula \(c.expected)")
    }

    @Test(arguments: ComparisonCases.cones)
    func coneGainIsTheSpecFormula(_ c: ComparisonCases.Cone) throws {
        let coned = ToneScene.scene(ComparisonCases.changes(c))
        var open = c
        open.outerGain = 1
        let reference = ToneScene.scene(ComparisonCases.changes(open))
        let gain = ToneScene.level(try render(coned), of: coned) / ToneScene.level(try render(reference), of: reference)
        #expect(abs(ToneScene.decibels(gain) - ToneScene.decibels(Double(c.expected))) < 0.1, "measured \(gain), formula \(c.expected)")
    }

    @Test(arguments: ComparisonCases.dopplers)
    func dopplerPitchIsTheSpecFormula(_ c: ComparisonCases.Doppler) throws {
        let scene = ToneScene.scene(measuring: ToneScene.pitchFrames, ComparisonCases.changes(c))
        let ratio = ToneScene.pitch(try render(scene), of: scene) / ToneScene.hertz
        #expect(abs(ratio / c.expected - 1) < 0.001, "measured \(ratio), formula \(c.expected)")
    }

    @Test(arguments: ComparisonCases.pitches)
    func pitchScalesTheFrequency(_ pitch: Float) throws {
        let scene = ToneScene.scene(measuring: ToneScene.pitchFrames, [.distanceModel(.none), .position(source: 0, [0, 0, -1]), .pitch(source: 0, pitch)])
        let ratio = ToneScene.pitch(try render(scene), of: scene) / ToneScene.hertz
        #expect(abs(ratio / Double(pitch) - 1) < 0.001, "measured \(ratio)")
    }

    /// OpenAL 1.1's state machine and offsets, as OpenAL Soft reports them (the values the
    /// comparison holds Sonora to): offsets count rendered frames, pause holds, stop and the
    /// end of the buffer leave AL_STOPPED at offset 0, rewind gives AL_INITIAL, play from
    /// stopped starts over. A static buffer never counts as processed (OpenAL Soft 1.19).
    @Test func playPauseStopRewindFollowsTheSpec() throws {
        let scene = ComparisonScenes.playPauseStopRewind
        let observed = try render(scene).observations.map { $0[0] }
        let expected: [(SceneSourceState, Int)] = [
            (.initial, 0), (.playing, 1_000), (.playing, 2_000), (.paused, 2_000), (.playing, 3_000), (.playing, 4_500),
            (.stopped, 0), (.initial, 0), (.playing, 1_200), (.stopped, 0), (.playing, 400), (.playing, 3_400), (.stopped, 0),
        ]
        #expect(observed.map { SceneObservation(state: $0.state, sampleOffset: $0.sampleOffset, buffersQueued: 1, buffersProcessed: 0) } == observed)
        #expect(observed.map(\.state) == expected.map(\.0))
        #expect(observed.map(\.sampleOffset) == expected.map(\.1))
    }

    /// Streaming: a buffer counts as processed once played through; unqueue takes the oldest;
    /// a queue that runs dry stops the source with every buffer processed.
    @Test func queuedStreamingCountsProcessedBuffers() throws {
        let scene = ComparisonScenes.queuedStreaming
        let observed = try render(scene).observations.map { $0[0] }
        #expect(observed.map(\.buffersProcessed) == [0, 0, 1, 2, 0, 2, 1, 3, 0, 0, 1])
        #expect(observed.map(\.buffersQueued) == [4, 4, 4, 4, 4, 4, 3, 3, 0, 1, 1])
        #expect(observed.map(\.unqueued) == [[], [], [], [], [0, 1], [], [2], [], [3, 4, 5], [], []])
        #expect(observed.map(\.sampleOffset) == [0, 512, 1_024, 2_124, 636, 2_136, 1_648, 0, 0, 700, 0])
        #expect(observed.map(\.state) == [.initial, .playing, .playing, .playing, .playing, .playing, .playing, .stopped, .stopped, .playing, .stopped])
    }

    /// Placement: a source on the right is louder on the right (absolute, relative, turned
    /// listener), and 1.19's stereo panning (pair-wise between ±30°, from first-order
    /// ambisonic gains) puts a source in front 3.4 dB above the same source behind.
    @Test(arguments: [false, true])
    func placementIsReadableFromTheLevels(hrtf: Bool) throws {
        func gains(_ changes: [SceneChange]) throws -> (left: Double, right: Double) {
            let scene = ToneScene.scene(hrtf: hrtf, [.distanceModel(.none)] + changes)
            return ToneScene.gains(try render(scene), of: scene)
        }
        let right = try gains([.position(source: 0, [2, 0, -1])])
        let left = try gains([.position(source: 0, [-2, 0, -1])])
        let relativeLeft = try gains([.listenerPosition([5, 0, 0]), .relative(source: 0, true), .position(source: 0, [-1, 0, 0])])
        let turnedRight = try gains([.listenerOrientation(at: [1, 0, 0], up: [0, 1, 0]), .position(source: 0, [0, 0, 2])])
        #expect(right.right > 1.5 * right.left && left.left > 1.5 * left.right)
        #expect(relativeLeft.left > 1.5 * relativeLeft.right && turnedRight.right > 1.5 * turnedRight.left)
        if !hrtf {
            let front = try gains([.position(source: 0, [0, 0, -1])]), back = try gains([.position(source: 0, [0, 0, 1])])
            #expect(abs(front.left - 0.5957) < 0.001 && abs(back.left - 0.4043) < 0.001 && front.left == front.right)
        }
    }
}

