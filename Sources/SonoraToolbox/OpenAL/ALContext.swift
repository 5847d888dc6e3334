import Foundation
import SonoraCore

/// An OpenAL context (ALCcontext): one listener, its sources, the distance model and
/// doppler settings, and the sticky error (alGetError). Its sources play through one 3D
/// mixer unit on the device.
///
/// - `suspend()` stops the context's processing (its sources hold their positions, the
///   device hears nothing of it) and defers property changes; `process()` resumes and applies
///   them (alcSuspendContext / alcProcessContext, OpenAL 1.1 §6.2.3).
/// - The context is an `AudioSessionParticipant` of the session it was made in: an
///   interruption suspends it; after the interruption ends, making it current again
///   (`ALContext.makeCurrent(context)`) or `process()` continues where it stopped.
///
/// Every operation is thread-safe (one lock per device).
public final class ALContext: AudioSessionParticipant, @unchecked Sendable {
    public let device: ALDevice
    public let attributes: ALContextAttributes
    public let listener: ALListener
    let renderer: ALContextRenderer
    private weak var session: AudioSession?

    // Under the device's lock.
    var globals = (distanceModel: ALDistanceModel.inverseClamped, doppler: ALDoppler())
    var sources: [ALSource] = []
    /// EFX: the effect slots made (each holds one of the mixer's auxiliary buses), and the
    /// sends each source has.
    var effectSlots: [ALAuxiliaryEffectSlot] = []
    let maxAuxiliarySends: Int
    /// The sticky error, shared with the buffers made here (see `ALErrorState`).
    let errors = ALErrorState()
    /// What the session holds (weakly) instead of the context (see `ALContextSessionLink`).
    private var sessionLink: ALContextSessionLink?
    private var explicitlySuspended = false
    private var interrupted = false
    /// An interruption ended: the next makeCurrent (or process) resumes.
    private var resumable = false
    private(set) var isDestroyed = false
    /// Sources whose mix parameters must be sent (changes deferred while suspended, or until
    /// a loopback render); `allDirty`: the listener or a global setting changed.
    /// A list with a flag on each source (`ALSource.isDirty`), not a dictionary: no hashing
    /// per setter call, no array made per flush.
    @exclusivity(unchecked) private var dirty: [ALSource] = []
    @exclusivity(unchecked) private var allDirty = false

    /// Creates a context on `device` (alcCreateContext). `invalidValue` for attributes the
    /// device cannot take (a loopback frequency other than its own, negative source counts);
    /// `outOfMemory` when the device has no room for another context or the mixer cannot be made.
    public init(device: ALDevice, attributes: ALContextAttributes = .init()) throws(ALError) {
        let mono = attributes.monoSources ?? ALContextAttributes.defaultMonoSources
        let stereo = attributes.stereoSources ?? ALContextAttributes.defaultStereoSources
        guard mono >= 0, stereo >= 0, mono + stereo > 0, mono + stereo <= 4096 else { throw .invalidValue }
        if let frequency = attributes.frequency {
            guard frequency > 0 else { throw .invalidValue }
            if device.isLoopback, frequency != device.frequency { throw .invalidValue }
        }
        if let refresh = attributes.refresh, refresh <= 0 { throw .invalidValue }
        let sends = attributes.maxAuxiliarySends ?? ALContextAttributes.defaultAuxiliarySends
        guard (0...ALAuxiliaryEffectSlot.maximumPerContext).contains(sends) else { throw .invalidValue }
        maxAuxiliarySends = sends
        self.device = device
        self.attributes = attributes
        listener = ALListener(device: device, errors: errors)
        let frequency = try device.locked { () throws(ALError) -> Int in
            if device.contexts.isEmpty, let requested = attributes.frequency, !device.isLoopback { return requested }
            return device.frequency
        }
        renderer = try ALContextRenderer(
            frequency: frequency, channels: device.channels, monoSources: mono, stereoSources: stereo,
            hrtf: attributes.hrtf == true && device.channels == 2, maximumFrames: ALDevice.maximumFrames)
        try device.locked { () throws(ALError) in
            try device.attach(self, frequency: attributes.frequency)
            guard device.insert(renderer) else {
                device.detach(self)
                throw .outOfMemory
            }
            do throws(ALError) {
                try device.startPlaybackIfNeeded()
            } catch {
                device.detach(self)
                throw error
            }
        }
        // Held strongly until destroy (set once nothing above can fail: a context that failed to
        // be made must not be kept by its listener).
        device.locked { listener.context = self }
        let session = AudioSession.current
        self.session = session
        let link = ALContextSessionLink(self)
        sessionLink = link
        session.register(link)
    }

    deinit {
        if !isDestroyed { device.remove(renderer) }
    }

    // MARK: Current context

    private static let currentContext = ControlLock<ALContext?>(nil)

    /// The current context (alcGetCurrentContext).
    public static var current: ALContext? { currentContext.withLock { $0 } }

    /// Makes `context` current (nil: none), alcMakeContextCurrent. False for a destroyed
    /// context. Making current a context an interruption suspended resumes it once the
    /// interruption has ended.
    @discardableResult
    public static func makeCurrent(_ context: ALContext?) -> Bool {
        if let context {
            let ok = context.device.locked { () -> Bool in
                guard !context.isDestroyed else { return false }
                if context.resumable { context.resumeLocked() }
                return true
            }
            guard ok else { return false }
        }
        currentContext.withLock { $0 = context }
        return true
    }

    // MARK: Suspend and process

    /// Stops processing: sources hold their positions, changes wait for `process()`.
    public func suspend() {
        device.locked {
            guard !isDestroyed else { return }
            explicitlySuspended = true
            renderer.suspended.store(true, ordering: .releasing)
        }
    }

    /// Resumes processing (also after an interruption that has ended) and applies the
    /// changes made meanwhile.
    public func process() {
        device.locked {
            guard !isDestroyed else { return }
            if interrupted && !resumable { explicitlySuspended = false; return }
            resumeLocked()
        }
    }

    /// Whether the context is processing now.
    public var isProcessing: Bool { device.locked { !isDestroyed && !renderer.suspended.load(ordering: .acquiring) } }

    private func resumeLocked() {
        explicitlySuspended = false
        interrupted = false
        resumable = false
        // Processing first: sending what waited may need the device's renders to drain the unit's queue.
        renderer.suspended.store(false, ordering: .releasing)
        flushLocked()
    }

    /// Destroys the context (alcDestroyContext): its sources stop and are deleted, it leaves
    /// the device and the session. No longer current.
    public func destroy() {
        let wasLive = device.locked { () -> Bool in
            guard !isDestroyed else { return false }
            isDestroyed = true
            for source in sources { source.deleteLocked() }
            sources.removeAll()
            // The sources hold the context strongly: no list of ours may keep one.
            for source in dirty { source.isDirty = false }
            dirty.removeAll()
            // Nor the listener, nor the session's link (each holds the context strongly until now).
            listener.context = nil
            renderer.bank.commit()
            device.detach(self)
            return true
        }
        guard wasLive else { return }
        device.remove(renderer)
        Self.currentContext.withLock { if $0 === self { $0 = nil } }
        if let sessionLink {
            session?.unregister(sessionLink)
            sessionLink.cut()
        }
    }

    // MARK: AudioSessionParticipant

    public func audioSessionInterruptionBegan() {
        device.locked {
            guard !isDestroyed else { return }
            interrupted = true
            resumable = false
            renderer.suspended.store(true, ordering: .releasing)
        }
    }

    public func audioSessionInterruptionEnded(shouldResume: Bool) {
        device.locked {
            guard !isDestroyed, interrupted else { return }
            resumable = true
        }
    }

    // MARK: Global state

    /// AL_DISTANCE_MODEL (default inverseClamped).
    public var distanceModel: ALDistanceModel {
        get { device.locked { globals.distanceModel } }
        set { setDistanceModel(newValue) }
    }

    public func setDistanceModel(_ model: ALDistanceModel) {
        device.locked {
            globals.distanceModel = model
            globalsChangedLocked()
        }
    }

    /// AL_DOPPLER_FACTOR (≥ 0, default 1).
    public var dopplerFactor: Float {
        get { device.locked { globals.doppler.factor } }
        set { try? setDopplerFactor(newValue) }
    }

    public func setDopplerFactor(_ factor: Float) throws(ALError) {
        try device.locked { () throws(ALError) in
            guard factor >= 0, factor.isFinite else { throw recordLocked(.invalidValue, "dopplerFactor \(factor): must be finite and ≥ 0") }
            globals.doppler.factor = factor
            globalsChangedLocked()
        }
    }

    /// AL_SPEED_OF_SOUND (> 0, default 343.3 m/s).
    public var speedOfSound: Float {
        get { device.locked { globals.doppler.speedOfSound } }
        set { try? setSpeedOfSound(newValue) }
    }

    public func setSpeedOfSound(_ speed: Float) throws(ALError) {
        try device.locked { () throws(ALError) in
            guard speed > 0, speed.isFinite else { throw recordLocked(.invalidValue, "speedOfSound \(speed): must be finite and > 0") }
            globals.doppler.speedOfSound = speed
            globalsChangedLocked()
        }
    }

    // MARK: Objects

    /// A new source (alGenSources). `outOfMemory` past the context's mono + stereo source
    /// count; `invalidOperation` on a destroyed context.
    public func makeSource() throws(ALError) -> ALSource {
        try device.locked { () throws(ALError) -> ALSource in
            try checkLiveLocked("makeSource")
            guard sources.count < renderer.monoCount + renderer.stereoCount else {
                throw recordLocked(.outOfMemory, "makeSource: the context's \(renderer.monoCount + renderer.stereoCount) sources are all made")
            }
            let source = ALSource(context: self)
            sources.append(source)
            return source
        }
    }

    /// A new buffer (alGenBuffers): it belongs to the device, any of its contexts may play it.
    public func makeBuffer() throws(ALError) -> ALBuffer {
        try device.locked { () throws(ALError) -> ALBuffer in
            try checkLiveLocked("makeBuffer")
            return ALBuffer(device: device, context: self)
        }
    }

    // MARK: Groups

    /// Plays the sources together (alSourcePlayv): all start in the same render cycle.
    /// `invalidName` (and nothing changes) if one is deleted or of another context.
    public func play(_ sources: [ALSource]) throws(ALError) { try group(sources, "play") { source throws(ALError) in try source.playLocked() } }
    public func pause(_ sources: [ALSource]) throws(ALError) { try group(sources, "pause") { source throws(ALError) in try source.pauseLocked() } }
    public func stop(_ sources: [ALSource]) throws(ALError) { try group(sources, "stop") { source throws(ALError) in try source.stopLocked() } }
    public func rewind(_ sources: [ALSource]) throws(ALError) { try group(sources, "rewind") { source throws(ALError) in try source.rewindLocked() } }

    private func group(_ group: [ALSource], _ name: String, _ body: (ALSource) throws(ALError) -> Void) throws(ALError) {
        try device.locked { () throws(ALError) in
            try checkLiveLocked(name)
            for source in group where source.context !== self || source.isDeleted {
                throw recordLocked(.invalidName, "\(name): a source of the group is deleted or belongs to another context")
            }
            for source in group { try body(source) }
            pushLocked()
        }
    }

    // MARK: Errors

    /// Returns and clears the sticky error (alGetError): the first error since the last call.
    public func takeError() -> ALError? {
        // An error is recorded under the device's lock before the flag is raised: a call that
        // sees no flag returns what it would have found a moment earlier under the lock.
        guard errors.mayBePending else { return nil }
        return device.locked { errors.take() }
    }

    /// What the last error recorded was about (the call and the value).
    public var lastErrorMessage: String? { device.locked { errors.message } }

    /// Records `error` (kept if none is pending, as alGetError's first-error rule) and returns it to throw.
    func recordLocked(_ error: ALError, _ message: String) -> ALError {
        errors.record(error, message)
    }

    /// `call` is built only for the error: a setter's name interpolated on every call was a
    /// heap allocation per property change (a 256-source update makes 512).
    func checkLiveLocked(_ call: @autoclosure () -> String) throws(ALError) {
        if isDestroyed { throw recordLocked(.invalidOperation, "\(call()): the context is destroyed") }
    }

    // MARK: Updates

    /// Whether parameter changes wait (suspended, or a loopback device that renders later).
    private var defersLocked: Bool { device.isLoopback || renderer.suspended.load(ordering: .acquiring) }

    func sourceChangedLocked(_ source: ALSource) {
        if defersLocked {
            if !source.isDirty {
                source.isDirty = true
                dirty.append(source)
            }
        } else {
            source.sendMixLocked()
            pushLocked()
        }
    }

    func globalsChangedLocked() {
        if defersLocked {
            allDirty = true
        } else {
            for source in sources { source.sendMixLocked() }
            pushLocked()
        }
    }

    /// After an operation: the voices' commands go to the render side, and (unless deferred)
    /// the mixer's parameters to the unit.
    func pushLocked() {
        if !defersLocked { renderer.sendAllPending() }
        renderer.bank.commit()
    }

    /// Computes the mix parameters of every source changed meanwhile; on a playback device
    /// sends them (a loopback render sends them itself, a bounded number per slice).
    func flushLocked() {
        let all = allDirty
        allDirty = false
        if all { for source in sources where !source.isDeleted { source.sendMixLocked() } }
        for source in dirty {
            source.isDirty = false
            if !all && !source.isDeleted { source.sendMixLocked() }
        }
        dirty.removeAll(keepingCapacity: true)
        if !device.isLoopback { renderer.sendAllPending() }
        renderer.bank.commit()
        renderer.bank.purge()
    }

    /// A loopback render is about to run on the caller's thread: compute what waited.
    func flushBeforeLoopbackRender() {
        device.locked {
            guard !isDestroyed, !renderer.suspended.load(ordering: .acquiring) else { return }
            flushLocked()
        }
    }

    /// The spatial parameters of `source` now.
    func spatializationLocked(_ source: ALSource) -> ALSpatialization {
        ALSpatialization(source: source.properties, listener: listener.properties, distanceModel: globals.distanceModel, doppler: globals.doppler)
    }
}

extension ALContext {
    /// alDistanceModel by enum value: `invalidEnum` for a value that is no distance model.
    public func setDistanceModel(alValue value: Int32) throws(ALError) {
        guard let model = ALDistanceModel(alValue: value) else {
            throw device.locked { recordLocked(.invalidEnum, "setDistanceModel: 0x\(String(value, radix: 16)) is not a distance model") }
        }
        setDistanceModel(model)
    }
}
