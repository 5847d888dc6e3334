import COpenALSoft

/// A scene rendered through OpenAL Soft's loopback device, one AL call per change.
public final class OpenALSoftEngine: PositionalEngine {
    public let loopback: OpenALSoftLoopback
    // No dynamic exclusivity checks (as in `SonoraALEngine`): the benchmark calls `apply` for
    // every source at every update, and the checks were a visible share of the harness.
    @exclusivity(unchecked) private var buffers: [ALuint] = []
    @exclusivity(unchecked) private var sources: [ALuint] = []

    public init(frequency: Int = 48_000, hrtf: Bool = false) throws(OpenALSoftError) {
        loopback = try OpenALSoftLoopback(frequency: frequency, hrtf: hrtf)
    }

    public convenience init(for scene: PositionalScene) throws(OpenALSoftError) {
        try self.init(frequency: scene.frequency, hrtf: scene.hrtf)
    }

    deinit {
        loopback.makeCurrent()
        alDeleteSources(ALsizei(sources.count), sources)
        alDeleteBuffers(ALsizei(buffers.count), buffers)
    }

    public var name: String { "OpenAL Soft " + (loopback.version.split(separator: " ").last.map(String.init) ?? "") }

    public func load(_ scene: [SceneBuffer], sourceCount: Int) throws {
        loopback.makeCurrent()
        buffers = [ALuint](repeating: 0, count: scene.count)
        alGenBuffers(ALsizei(scene.count), &buffers)
        try loopback.check("alGenBuffers(\(scene.count))")
        for (name, buffer) in zip(buffers, scene) {
            let format = buffer.channels == 2 ? AL_FORMAT_STEREO_FLOAT32 : AL_FORMAT_MONO_FLOAT32
            buffer.samples.withUnsafeBytes {
                alBufferData(name, format, $0.baseAddress, ALsizei($0.count), ALsizei(buffer.frequency))
            }
            try loopback.check("alBufferData(\(buffer.frames) frames, \(buffer.channels) channels)")
        }
        sources = [ALuint](repeating: 0, count: sourceCount)
        alGenSources(ALsizei(sourceCount), &sources)
        try loopback.check("alGenSources(\(sourceCount))")
    }

    public func apply(_ change: SceneChange) throws -> [Int] {
        loopback.makeCurrent()
        var unqueued: [Int] = []
        switch change {
        case .distanceModel(let model): alDistanceModel(Self.alModel(model))
        case .dopplerFactor(let factor): alDopplerFactor(factor)
        case .speedOfSound(let speed): alSpeedOfSound(speed)
        case .listenerPosition(let p): alListener3f(AL_POSITION, p.x, p.y, p.z)
        case .listenerVelocity(let v): alListener3f(AL_VELOCITY, v.x, v.y, v.z)
        case .listenerOrientation(let at, let up):
            alListenerfv(AL_ORIENTATION, [at.x, at.y, at.z, up.x, up.y, up.z])
        case .listenerGain(let gain): alListenerf(AL_GAIN, gain)
        case .buffer(let s, let buffer): alSourcei(sources[s], AL_BUFFER, buffer.map { ALint(buffers[$0]) } ?? 0)
        case .position(let s, let p): alSource3f(sources[s], AL_POSITION, p.x, p.y, p.z)
        case .velocity(let s, let v): alSource3f(sources[s], AL_VELOCITY, v.x, v.y, v.z)
        case .direction(let s, let d): alSource3f(sources[s], AL_DIRECTION, d.x, d.y, d.z)
        case .relative(let s, let on): alSourcei(sources[s], AL_SOURCE_RELATIVE, on ? AL_TRUE : AL_FALSE)
        case .looping(let s, let on): alSourcei(sources[s], AL_LOOPING, on ? AL_TRUE : AL_FALSE)
        case .pitch(let s, let pitch): alSourcef(sources[s], AL_PITCH, pitch)
        case .gain(let s, let gain): alSourcef(sources[s], AL_GAIN, gain)
        case .gainLimits(let s, let low, let high):
            alSourcef(sources[s], AL_MIN_GAIN, low)
            alSourcef(sources[s], AL_MAX_GAIN, high)
        case .distances(let s, let reference, let maximum, let rolloff):
            alSourcef(sources[s], AL_REFERENCE_DISTANCE, reference)
            alSourcef(sources[s], AL_MAX_DISTANCE, maximum)
            alSourcef(sources[s], AL_ROLLOFF_FACTOR, rolloff)
        case .cone(let s, let inner, let outer, let outerGain):
            alSourcef(sources[s], AL_CONE_INNER_ANGLE, inner)
            alSourcef(sources[s], AL_CONE_OUTER_ANGLE, outer)
            alSourcef(sources[s], AL_CONE_OUTER_GAIN, outerGain)
        case .sampleOffset(let s, let offset): alSourcei(sources[s], AL_SAMPLE_OFFSET, ALint(offset))
        case .queue(let s, let indices):
            alSourceQueueBuffers(sources[s], ALsizei(indices.count), indices.map { buffers[$0] })
        case .unqueue(let s, let count):
            var names = [ALuint](repeating: 0, count: count)
            alSourceUnqueueBuffers(sources[s], ALsizei(count), &names)
            unqueued = names.map { name in buffers.firstIndex(of: name) ?? -1 }
        case .play(let group): alSourcePlayv(ALsizei(group.count), group.map { sources[$0] })
        case .pause(let group): alSourcePausev(ALsizei(group.count), group.map { sources[$0] })
        case .stop(let group): alSourceStopv(ALsizei(group.count), group.map { sources[$0] })
        case .rewind(let group): alSourceRewindv(ALsizei(group.count), group.map { sources[$0] })
        }
        try loopback.check("\(change)")
        return unqueued
    }

    public func observe(source s: Int) throws -> SceneObservation {
        loopback.makeCurrent()
        var state: ALint = 0, offset: ALint = 0, queued: ALint = 0, processed: ALint = 0
        alGetSourcei(sources[s], AL_SOURCE_STATE, &state)
        alGetSourcei(sources[s], AL_SAMPLE_OFFSET, &offset)
        alGetSourcei(sources[s], AL_BUFFERS_QUEUED, &queued)
        alGetSourcei(sources[s], AL_BUFFERS_PROCESSED, &processed)
        try loopback.check("alGetSourcei(source \(s))")
        let sceneState: SceneSourceState = switch state {
        case AL_PLAYING: .playing
        case AL_PAUSED: .paused
        case AL_STOPPED: .stopped
        default: .initial
        }
        return SceneObservation(state: sceneState, sampleOffset: Int(offset), buffersQueued: Int(queued), buffersProcessed: Int(processed))
    }

    public func render(into interleaved: UnsafeMutablePointer<Float>, frames: Int) {
        loopback.render(into: interleaved, frames: frames)
    }

    static func alModel(_ model: SceneDistanceModel) -> ALenum {
        switch model {
        case .none: AL_NONE
        case .inverse: AL_INVERSE_DISTANCE
        case .inverseClamped: AL_INVERSE_DISTANCE_CLAMPED
        case .linear: AL_LINEAR_DISTANCE
        case .linearClamped: AL_LINEAR_DISTANCE_CLAMPED
        case .exponent: AL_EXPONENT_DISTANCE
        case .exponentClamped: AL_EXPONENT_DISTANCE_CLAMPED
        }
    }
}
