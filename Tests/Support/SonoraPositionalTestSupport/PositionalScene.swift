import Foundation

/// A positional scene in OpenAL 1.1's terms, rendered the same way by any `PositionalEngine`
/// (OpenAL Soft's loopback, Sonora's `ALDevice.loopback`): buffers, a number of sources, and
/// steps — changes applied, then N frames rendered — with what each source reports after
/// every step.
public struct PositionalScene: Sendable {
    public var frequency: Int
    public var hrtf: Bool
    public var buffers: [SceneBuffer]
    public var sourceCount: Int
    public var steps: [SceneStep]

    public init(frequency: Int = 48_000, hrtf: Bool = false, buffers: [SceneBuffer], sourceCount: Int, steps: [SceneStep] = []) {
        self.frequency = frequency
        self.hrtf = hrtf
        self.buffers = buffers
        self.sourceCount = sourceCount
        self.steps = steps
    }

    /// Appends a step: `changes`, then `frames` rendered.
    public mutating func step(_ frames: Int, _ changes: SceneChange...) {
        steps.append(SceneStep(changes: changes, frames: frames))
    }

    public var totalFrames: Int { steps.reduce(0) { $0 + $1.frames } }
}

/// PCM float samples, interleaved when stereo.
public struct SceneBuffer: Sendable {
    public var samples: [Float]
    public var channels: Int
    public var frequency: Int
    public init(samples: [Float], channels: Int = 1, frequency: Int = 48_000) {
        self.samples = samples
        self.channels = channels
        self.frequency = frequency
    }
    public var frames: Int { samples.count / channels }

    /// A sine of `hertz` at `amplitude`, `frames` long; a whole number of cycles makes it loop cleanly.
    public static func tone(hertz: Double, frames: Int, amplitude: Float = 0.25, frequency: Int = 48_000) -> SceneBuffer {
        let step = 2 * Double.pi * hertz / Double(frequency)
        return SceneBuffer(samples: (0..<frames).map { amplitude * Float(sin(step * Double($0))) }, frequency: frequency)
    }

    /// Seeded white noise (an LCG), uniform in ±amplitude.
    public static func noise(frames: Int, amplitude: Float = 0.25, seed: UInt32 = 1, frequency: Int = 48_000) -> SceneBuffer {
        var state = seed
        return SceneBuffer(samples: (0..<frames).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return amplitude * (Float(state >> 8) / Float(1 << 23) - 1)
        }, frequency: frequency)
    }
}

public struct SceneStep: Sendable {
    public var changes: [SceneChange]
    public var frames: Int
    public init(changes: [SceneChange], frames: Int) {
        self.changes = changes
        self.frames = frames
    }
}

/// OpenAL 1.1's distance models (§3.4).
public enum SceneDistanceModel: Sendable, CaseIterable {
    case none, inverse, inverseClamped, linear, linearClamped, exponent, exponentClamped
}

/// One change between steps; sources and buffers are named by their index in the scene.
public enum SceneChange: Sendable {
    // Context state.
    case distanceModel(SceneDistanceModel)
    case dopplerFactor(Float)
    case speedOfSound(Float)
    // Listener.
    case listenerPosition(SIMD3<Float>)
    case listenerVelocity(SIMD3<Float>)
    case listenerOrientation(at: SIMD3<Float>, up: SIMD3<Float>)
    case listenerGain(Float)
    // Source properties.
    case buffer(source: Int, buffer: Int?)
    case position(source: Int, SIMD3<Float>)
    case velocity(source: Int, SIMD3<Float>)
    case direction(source: Int, SIMD3<Float>)
    case relative(source: Int, Bool)
    case looping(source: Int, Bool)
    case pitch(source: Int, Float)
    case gain(source: Int, Float)
    case gainLimits(source: Int, min: Float, max: Float)
    case distances(source: Int, reference: Float, maximum: Float, rolloff: Float)
    case cone(source: Int, inner: Float, outer: Float, outerGain: Float)
    case sampleOffset(source: Int, Int)
    // Streaming.
    case queue(source: Int, buffers: [Int])
    case unqueue(source: Int, count: Int)
    // Playback, each on a group of sources at once.
    case play([Int]), pause([Int]), stop([Int]), rewind([Int])
}

public enum SceneSourceState: String, Sendable {
    case initial, playing, paused, stopped
}

/// What a source reports (alGetSource): compared between engines after every step.
public struct SceneObservation: Sendable, Equatable, CustomStringConvertible {
    public var state: SceneSourceState
    public var sampleOffset: Int
    public var buffersQueued: Int
    public var buffersProcessed: Int
    /// Buffers unqueued by `.unqueue` changes in this step, as buffer indices.
    public var unqueued: [Int]
    public init(state: SceneSourceState, sampleOffset: Int, buffersQueued: Int, buffersProcessed: Int, unqueued: [Int] = []) {
        self.state = state
        self.sampleOffset = sampleOffset
        self.buffersQueued = buffersQueued
        self.buffersProcessed = buffersProcessed
        self.unqueued = unqueued
    }
    public var description: String {
        "\(state) @\(sampleOffset) queued \(buffersQueued) processed \(buffersProcessed)" + (unqueued.isEmpty ? "" : " unqueued \(unqueued)")
    }
}

/// A scene's output: the stereo channels and, per step, each source's observation (taken
/// after the step's frames are rendered).
public struct SceneRendering: Sendable {
    public var left: [Float]
    public var right: [Float]
    public var observations: [[SceneObservation]]

    /// The frames rendered by step `index` (left, right).
    public func frames(ofStep index: Int, in scene: PositionalScene) -> (left: ArraySlice<Float>, right: ArraySlice<Float>) {
        let start = scene.steps[..<index].reduce(0) { $0 + $1.frames }
        let range = start..<(start + scene.steps[index].frames)
        return (left[range], right[range])
    }
}

/// An OpenAL implementation a scene can be rendered through.
public protocol PositionalEngine: AnyObject {
    /// A short name for reports ("OpenAL Soft 1.19.1", "Sonora").
    var name: String { get }
    func load(_ buffers: [SceneBuffer], sourceCount: Int) throws
    /// Applies one change; returns the buffers an `.unqueue` took off (as indices), else [].
    func apply(_ change: SceneChange) throws -> [Int]
    func observe(source: Int) throws -> SceneObservation
    /// Renders `frames` interleaved stereo frames on the calling thread.
    func render(into interleaved: UnsafeMutablePointer<Float>, frames: Int)
}

extension PositionalScene {
    /// Renders the whole scene through `engine` and records every source after every step.
    public func render(on engine: PositionalEngine) throws -> SceneRendering {
        try engine.load(buffers, sourceCount: sourceCount)
        let maximumFrames = steps.map(\.frames).max() ?? 0
        var interleaved = [Float](repeating: 0, count: 2 * maximumFrames)
        var rendering = SceneRendering(left: [], right: [], observations: [])
        rendering.left.reserveCapacity(totalFrames)
        rendering.right.reserveCapacity(totalFrames)
        for step in steps {
            var unqueued: [Int: [Int]] = [:]
            for change in step.changes {
                let taken = try engine.apply(change)
                if case .unqueue(let source, _) = change { unqueued[source, default: []] += taken }
            }
            interleaved.withUnsafeMutableBufferPointer { engine.render(into: $0.baseAddress!, frames: step.frames) }
            for frame in 0..<step.frames {
                rendering.left.append(interleaved[2 * frame])
                rendering.right.append(interleaved[2 * frame + 1])
            }
            rendering.observations.append(try (0..<sourceCount).map { source in
                var observation = try engine.observe(source: source)
                observation.unqueued = unqueued[source] ?? []
                return observation
            })
        }
        return rendering
    }
}
