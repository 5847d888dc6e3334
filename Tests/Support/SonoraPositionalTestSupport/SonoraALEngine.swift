import SonoraToolbox

/// A scene rendered through Sonora's OpenAL-style API on its loopback device: the same
/// changes `OpenALSoftEngine` makes, through `ALContext`/`ALSource`. Property setters keep
/// OpenAL's sticky error; it is taken after every change and thrown with the change named.
public final class SonoraALEngine: PositionalEngine {
    public let device: ALDevice
    public let hrtf: Bool
    /// Made by `load`, sized to the scene (one mixer input per source: each input costs
    /// resampler set-up, so a context for 4 sources is not built for 256).
    // No dynamic exclusivity checks (as in `OpenALSoftEngine`): the benchmark calls `apply`
    // for every source at every update, and the checks were a visible share of the harness.
    @exclusivity(unchecked) public private(set) var context: ALContext!
    @exclusivity(unchecked) private var buffers: [ALBuffer] = []
    @exclusivity(unchecked) private var sources: [ALSource] = []

    public init(frequency: Int = 48_000, hrtf: Bool = false) throws {
        device = try ALDevice.loopback(frequency: frequency, channels: 2)
        self.hrtf = hrtf
    }

    public convenience init(for scene: PositionalScene) throws {
        try self.init(frequency: scene.frequency, hrtf: scene.hrtf)
    }

    deinit { context?.destroy() }

    public var name: String { "Sonora" }

    public func load(_ scene: [SceneBuffer], sourceCount: Int) throws {
        context?.destroy()
        context = try ALContext(device: device, attributes: ALContextAttributes(
            frequency: device.frequency, monoSources: max(1, sourceCount), stereoSources: 1, hrtf: hrtf))
        buffers = []
        for buffer in scene {
            let made = try context.makeBuffer()
            let format: ALFormat = buffer.channels == 2 ? .stereoFloat32 : .monoFloat32
            // (A typed-throws closure here crashes Swift 6.3.1's IRGen: keep it untyped.)
            try buffer.samples.withUnsafeBytes { bytes in try made.setData(bytes, format: format, frequency: buffer.frequency) }
            buffers.append(made)
        }
        sources = []
        for _ in 0..<sourceCount { sources.append(try context.makeSource()) }
    }

    public func apply(_ change: SceneChange) throws -> [Int] {
        var unqueued: [Int] = []
        switch change {
        case .distanceModel(let model): context.distanceModel = Self.model(model)
        case .dopplerFactor(let factor): context.dopplerFactor = factor
        case .speedOfSound(let speed): context.speedOfSound = speed
        case .listenerPosition(let p): context.listener.position = p
        case .listenerVelocity(let v): context.listener.velocity = v
        case .listenerOrientation(let at, let up): context.listener.orientation = (at: at, up: up)
        case .listenerGain(let gain): context.listener.gain = gain
        case .buffer(let s, let buffer): sources[s].buffer = buffer.map { buffers[$0] }
        case .position(let s, let p): sources[s].position = p
        case .velocity(let s, let v): sources[s].velocity = v
        case .direction(let s, let d): sources[s].direction = d
        case .relative(let s, let on): sources[s].isRelative = on
        case .looping(let s, let on): sources[s].isLooping = on
        case .pitch(let s, let pitch): sources[s].pitch = pitch
        case .gain(let s, let gain): sources[s].gain = gain
        case .gainLimits(let s, let low, let high):
            sources[s].minGain = low
            sources[s].maxGain = high
        case .distances(let s, let reference, let maximum, let rolloff):
            sources[s].referenceDistance = reference
            sources[s].maxDistance = maximum
            sources[s].rolloffFactor = rolloff
        case .cone(let s, let inner, let outer, let outerGain):
            sources[s].coneInnerAngle = inner
            sources[s].coneOuterAngle = outer
            sources[s].coneOuterGain = outerGain
        case .sampleOffset(let s, let offset): sources[s].sampleOffset = offset
        case .queue(let s, let indices):
            for index in indices { try sources[s].queue(buffers[index]) }
        case .unqueue(let s, let count):
            let taken = try sources[s].unqueueBuffers(count)
            unqueued = taken.map { buffer in buffers.firstIndex { $0 === buffer } ?? -1 }
        case .play(let group): try context.play(group.map { sources[$0] })
        case .pause(let group): try context.pause(group.map { sources[$0] })
        case .stop(let group): try context.stop(group.map { sources[$0] })
        case .rewind(let group): try context.rewind(group.map { sources[$0] })
        }
        if let error = context.takeError() {
            throw OpenALSoftError("Sonora: \(change): \(error)")
        }
        return unqueued
    }

    public func observe(source s: Int) throws -> SceneObservation {
        let source = sources[s]
        let state: SceneSourceState = switch source.state {
        case .initial: .initial
        case .playing: .playing
        case .paused: .paused
        case .stopped: .stopped
        }
        return SceneObservation(state: state, sampleOffset: source.sampleOffset, buffersQueued: source.buffersQueued,
                                buffersProcessed: source.buffersProcessed)
    }

    public func render(into interleaved: UnsafeMutablePointer<Float>, frames: Int) {
        device.render(into: interleaved, frames: frames)
    }

    static func model(_ model: SceneDistanceModel) -> ALDistanceModel {
        switch model {
        case .none: .none
        case .inverse: .inverse
        case .inverseClamped: .inverseClamped
        case .linear: .linear
        case .linearClamped: .linearClamped
        case .exponent: .exponent
        case .exponentClamped: .exponentClamped
        }
    }
}
