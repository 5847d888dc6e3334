import SonoraCore
import SonoraDSP

/// Test and pipeline signals ('augn'/'tone', Sonora's): sine, logarithmic sweep,
/// white or pink noise, impulses or silence, the same on every output channel.
public final class ToneGeneratorUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .generator, subType: "tone", manufacturer: .sonora)

    public enum Parameter {
        public static let waveform: AudioUnitParameterID = 0
        public static let frequency: AudioUnitParameterID = 1
        public static let level: AudioUnitParameterID = 2
        public static let sweepEndFrequency: AudioUnitParameterID = 3
        public static let sweepDuration: AudioUnitParameterID = 4
        public static let impulseInterval: AudioUnitParameterID = 5
    }

    public enum Waveform: Int, CaseIterable, Sendable {
        case sine, sweep, whiteNoise, pinkNoise, impulse, silence
        public var name: String { ["Sine", "Sweep", "White noise", "Pink noise", "Impulse", "Silence"][rawValue] }
    }

    private struct GeneratorState {
        var sine: SineOscillator
        var sweep: LogSweep
        var white: NoiseGenerator
        var pink: NoiseGenerator
        var waveform = -1
        var sweepSettings = (start: 0.0, end: 0.0, seconds: 0.0)
        var framesToImpulse = 0
    }

    @exclusivity(unchecked) private var generator: UnsafeMutablePointer<GeneratorState>?
    @exclusivity(unchecked) private var slotBase = 0
    @exclusivity(unchecked) private var sampleRate = 48000.0

    public init() {
        func info(_ name: String, _ id: String, _ unit: AudioUnitParameterUnit, _ range: ClosedRange<Float>, _ value: Float,
                  _ flags: AudioUnitParameterFlags = .readWrite, _ strings: [String] = []) -> AudioUnitParameterInfo {
            AudioUnitParameterInfo(name: name, identifier: id, unit: unit, minValue: range.lowerBound, maxValue: range.upperBound,
                                   defaultValue: value, flags: flags, valueStrings: strings)
        }
        super.init(
            description: Self.componentDescription, name: "ToneGenerator", inputs: 0, outputs: 1,
            parameters: [
                AudioUnitParameterDefinition(
                    Parameter.waveform,
                    info("Waveform", "waveform", .indexed, 0...Float(Waveform.allCases.count - 1), 0, .readWrite, Waveform.allCases.map(\.name))),
                AudioUnitParameterDefinition(Parameter.frequency, info("Frequency", "frequency", .hertz, 1...24000, 1000, [.readWrite, .displayLogarithmic])),
                AudioUnitParameterDefinition(Parameter.level, info("Level", "level", .decibels, -120...0, -20, [.readWrite, .canRamp])),
                AudioUnitParameterDefinition(Parameter.sweepEndFrequency, info("Sweep End", "sweepEnd", .hertz, 1...24000, 20000, [.readWrite, .displayLogarithmic])),
                AudioUnitParameterDefinition(Parameter.sweepDuration, info("Sweep Duration", "sweepDuration", .seconds, 0.01...600, 5)),
                AudioUnitParameterDefinition(Parameter.impulseInterval, info("Impulse Interval", "impulseInterval", .seconds, 0.001...60, 1)),
            ])
    }

    public override func allocateRenderResources() throws(AudioError) {
        slotBase = try parameterSlot(ParameterAddress(Parameter.waveform))
        sampleRate = try streamFormat(scope: .output, element: 0).sampleRate
        let generator = UnsafeMutablePointer<GeneratorState>.allocate(capacity: 1)
        generator.initialize(
            to: GeneratorState(
                sine: SineOscillator(frequency: 1000, sampleRate: sampleRate),
                sweep: LogSweep(from: 20, to: 20000, duration: 1, sampleRate: sampleRate),
                white: NoiseGenerator(color: .white, seed: 1), pink: NoiseGenerator(color: .pink, seed: 2)))
        self.generator = generator
    }

    public override func deallocateRenderResources() {
        generator?.deinitialize(count: 1)
        generator?.deallocate()
        generator = nil
    }

    public override func resetRenderState() {
        generator?.pointee.waveform = -1
        generator?.pointee.sine.reset()
        generator?.pointee.white = NoiseGenerator(color: .white, seed: 1)
        generator?.pointee.pink = NoiseGenerator(color: .pink, seed: 2)
    }

    public override func process(_ context: RenderContext) -> AudioError.Code {
        guard let generator else { return .uninitialized }
        let waveform = Int(context.parameter(slotBase + Int(Parameter.waveform)))
        let frequency = Double(context.parameter(slotBase + Int(Parameter.frequency)))
        let sweepEnd = Double(context.parameter(slotBase + Int(Parameter.sweepEndFrequency)))
        let sweepSeconds = Double(context.parameter(slotBase + Int(Parameter.sweepDuration)))
        let impulseSeconds = Double(context.parameter(slotBase + Int(Parameter.impulseInterval)))
        let levelSlot = slotBase + Int(Parameter.level)
        let ramping = context.isRamping(levelSlot)
        let levels: UnsafePointer<Float>? = ramping ? context.parameterValues(levelSlot) : nil
        let amplitude = ramping ? 1 : Decibels.toLinear(context.parameter(levelSlot))
        let samples = context.output.samples(0)
        let frames = context.frameCount

        let sweepSettings = (frequency, sweepEnd, sweepSeconds)
        if waveform != generator.pointee.waveform
            || (waveform == Waveform.sweep.rawValue && sweepSettings != generator.pointee.sweepSettings)
        {
            generator.pointee.waveform = waveform
            generator.pointee.sweepSettings = sweepSettings
            generator.pointee.sweep = LogSweep(
                from: frequency, to: sweepEnd, duration: max(1, Int(sweepSeconds * sampleRate)), sampleRate: sampleRate)
            generator.pointee.framesToImpulse = 0
        }
        switch Waveform(rawValue: waveform) ?? .silence {
        case .sine:
            generator.pointee.sine.frequency = frequency
            generator.pointee.sine.render(into: samples, count: frames, amplitude: amplitude)
        case .sweep:
            generator.pointee.sweep.render(into: samples, count: frames, amplitude: amplitude)
        case .whiteNoise:
            generator.pointee.white.render(into: samples, count: frames, amplitude: amplitude)
        case .pinkNoise:
            generator.pointee.pink.render(into: samples, count: frames, amplitude: amplitude)
        case .impulse:
            samples.update(repeating: 0, count: frames)
            let interval = max(1, Int(impulseSeconds * sampleRate))
            var next = generator.pointee.framesToImpulse
            while next < frames {
                samples[next] = amplitude
                next += interval
            }
            generator.pointee.framesToImpulse = next - frames
        case .silence:
            samples.update(repeating: 0, count: frames)
        }
        if let levels {
            for frame in 0..<frames { samples[frame] *= Decibels.toLinear(levels[frame]) }
        }
        for channel in 1..<max(1, context.output.channelCount) {
            copySamples(from: samples, to: context.output.samples(channel), count: frames)
        }
        return .noError
    }
}
