/// An OpenAL source: plays one static buffer or a queue of buffers (streaming) at a place
/// in the listener's world, through one input of its context's 3D mixer.
///
/// State transitions are OpenAL 1.1's (see `ALSourceState`); a source that plays to its end
/// becomes `stopped`, every queued buffer then processed. Property setters with an invalid
/// value leave the property unchanged and record `invalidValue` on the context (alGetError);
/// each has a throwing `set…` form. A deleted source's calls record `invalidName`.
public final class ALSource: @unchecked Sendable {
    enum Kind { case undetermined, single, streaming }

    /// Held strongly: each read of an `unowned` reference was an atomic retain and release,
    /// slow ones (the context's weak references give it a side table), on every setter of
    /// every source. No cycle outlives the context: `ALContext.destroy` (and the device's
    /// `close`, which destroys its contexts) drops the context's sources, and until then the
    /// device holds the context anyway. A source kept after its context is destroyed keeps
    /// the context's memory, and its calls record `invalidOperation` (destroyed context).
    let context: ALContext
    /// In the context's deferred changes (`ALContext.sourceChangedLocked`); under the lock.
    @exclusivity(unchecked) var isDirty = false
    // Under the device's lock. The values every setter and update touch skip the dynamic
    // exclusivity checks (the lock orders them; the checks were a visible share of an update).
    @exclusivity(unchecked) var properties = ALSourceProperties()
    private var looping = false
    private(set) var kind = Kind.undetermined
    private var queueBuffers: [ALBuffer] = []
    /// The storages the queue plays (fixed while queued: buffers in use cannot change).
    private var storages: [ALBufferStorage] = []
    /// Sequence number of the queue's head; each queued buffer takes the next one.
    private var firstSequence = 0
    @exclusivity(unchecked) private var element: Int?
    private var snapshot: ALQueueSnapshot?
    private var stateValue = ALSourceState.initial
    private var generation = 0
    /// Where the last start command put the voice (until the render side publishes).
    private var startPosition: (sequence: Int, frame: Double) = (0, 0)
    /// An offset set while initial or stopped, in buffer frames: the next play starts there.
    private var pendingOffset: Int?
    @exclusivity(unchecked) private var rateScale: Double = 1
    private(set) var isDeleted = false
    /// Auxiliary sends (EFX), as many as the context's `maxAuxiliarySends`.
    var sends: [ALAuxiliarySend] = []

    init(context: ALContext) {
        self.context = context
        sends = Array(repeating: ALAuxiliarySend(), count: context.maxAuxiliarySends)
    }

    private var device: ALDevice { context.device }
    private var bank: ALVoiceBank { context.renderer.bank }

    // MARK: Buffers

    /// AL_BUFFER: the static buffer (nil: none). Setting it replaces the queue; only while
    /// initial or stopped (`invalidOperation` otherwise). Reading a streaming source gives the
    /// buffer playing now.
    public var buffer: ALBuffer? {
        get {
            device.locked { () -> ALBuffer? in
                guard !queueBuffers.isEmpty else { return nil }
                guard kind == .streaming else { return queueBuffers.first }
                return queueBuffers[min(currentIndexLocked(), queueBuffers.count - 1)]
            }
        }
        set { try? setBuffer(newValue) }
    }

    public func setBuffer(_ buffer: ALBuffer?) throws(ALError) {
        try device.locked { () throws(ALError) in
            try checkLocked("buffer")
            refreshLocked()
            guard stateValue == .initial || stateValue == .stopped else {
                throw context.recordLocked(.invalidOperation, "ALSource.buffer: the source is \(stateValue); stop it first")
            }
            if let buffer { try checkBufferLocked(buffer, "buffer") }
            releaseQueueLocked()
            if let buffer {
                kind = .single
                append([buffer])
            } else {
                kind = .undetermined
            }
            try rebuildLocked()
            context.pushLocked()
        }
    }

    /// Appends buffers to the queue (alSourceQueueBuffers). `invalidOperation` on a source
    /// with a static buffer or for buffers whose format or frequency differs from the queue's;
    /// `invalidName` for a deleted buffer or one of another device.
    public func queue(_ buffers: [ALBuffer]) throws(ALError) {
        try device.locked { () throws(ALError) in
            try checkLocked("queue")
            guard kind != .single else {
                throw context.recordLocked(.invalidOperation, "ALSource.queue: the source has a static buffer")
            }
            var reference = storages.first { $0.frames > 0 }.map { ($0.format, $0.frequency) }
            for buffer in buffers {
                try checkBufferLocked(buffer, "queue")
                guard let storage = buffer.storage else { continue }
                if let (format, frequency) = reference, format != storage.format || frequency != storage.frequency {
                    throw context.recordLocked(.invalidOperation,
                        "ALSource.queue: a \(storage.format) buffer at \(storage.frequency) Hz does not match the queue's \(format) at \(frequency) Hz")
                }
                reference = (storage.format, storage.frequency)
            }
            guard !buffers.isEmpty else { return }
            kind = .streaming
            append(buffers)
            try rebuildLocked()
            context.pushLocked()
        }
    }

    public func queue(_ buffer: ALBuffer) throws(ALError) { try queue([buffer]) }

    /// Removes `count` processed buffers from the head of the queue and returns them
    /// (alSourceUnqueueBuffers). `invalidValue` for more than are processed, a negative
    /// count, or a source that is not streaming (or loops).
    @discardableResult
    public func unqueueBuffers(_ count: Int) throws(ALError) -> [ALBuffer] {
        try device.locked { () throws(ALError) -> [ALBuffer] in
            try checkLocked("unqueueBuffers")
            guard count >= 0 else { throw context.recordLocked(.invalidValue, "ALSource.unqueueBuffers(\(count)): negative count") }
            guard count > 0 else { return [] }
            guard kind == .streaming, !looping else {
                throw context.recordLocked(.invalidValue, "ALSource.unqueueBuffers: the source is not streaming (or it loops)")
            }
            let processed = processedLocked()
            guard count <= processed else {
                throw context.recordLocked(.invalidValue, "ALSource.unqueueBuffers(\(count)): only \(processed) buffer(s) processed")
            }
            let removed = Array(queueBuffers.prefix(count))
            queueBuffers.removeFirst(count)
            storages.removeFirst(count)
            firstSequence += count
            for buffer in removed { buffer.useCount -= 1 }
            if queueBuffers.isEmpty { kind = .undetermined }
            try rebuildLocked()
            context.pushLocked()
            return removed
        }
    }

    /// AL_BUFFERS_QUEUED (1 for a static buffer).
    public var buffersQueued: Int { device.locked { queueBuffers.count } }

    /// AL_BUFFERS_PROCESSED: queued buffers played through (0 for static or looping
    /// sources; all of them once stopped; none while initial).
    public var buffersProcessed: Int { device.locked { processedLocked() } }

    // MARK: Playback

    /// AL_SOURCE_STATE.
    public var state: ALSourceState {
        device.locked { () -> ALSourceState in
            refreshLocked()
            return stateValue
        }
    }

    /// Plays (alSourcePlay): from the start (or the offset set) when initial or stopped, on
    /// from where it paused, again from the start when playing. A source without audio stops.
    public func play() throws(ALError) { try operation("play") { source throws(ALError) in try source.playLocked() } }
    /// Pauses a playing source (others: no change).
    public func pause() throws(ALError) { try operation("pause") { source throws(ALError) in try source.pauseLocked() } }
    /// Stops a playing or paused source.
    public func stop() throws(ALError) { try operation("stop") { source throws(ALError) in try source.stopLocked() } }
    /// Back to initial (from any state), position at the start.
    public func rewind() throws(ALError) { try operation("rewind") { source throws(ALError) in try source.rewindLocked() } }

    private func operation(_ name: String, _ body: (ALSource) throws(ALError) -> Void) throws(ALError) {
        try device.locked { () throws(ALError) in
            try checkLocked(name)
            try body(self)
            context.pushLocked()
        }
    }

    func playLocked() throws(ALError) {
        refreshLocked()
        guard let element, totalFramesLocked() > 0 else {
            // Nothing to play: straight to stopped, as OpenAL Soft.
            if let element { _ = bank.send(.halt(voice: element)); context.renderer.setEnabled(false, element: element) }
            stateValue = .stopped
            pendingOffset = nil
            return
        }
        if stateValue == .paused {
            try send(.run(voice: element, true))
        } else {
            let position = positionLocked(frames: pendingOffset ?? 0)
            try start(at: position, running: true)
        }
        pendingOffset = nil
        stateValue = .playing
        sendMixLocked()
        context.renderer.setEnabled(true, element: element)
    }

    func pauseLocked() throws(ALError) {
        refreshLocked()
        guard stateValue == .playing, let element else { return }
        try send(.run(voice: element, false))
        stateValue = .paused
    }

    func stopLocked() throws(ALError) {
        refreshLocked()
        pendingOffset = nil
        guard stateValue == .playing || stateValue == .paused else { return }
        if let element {
            try send(.halt(voice: element))
            context.renderer.setEnabled(false, element: element)
        }
        stateValue = .stopped
    }

    func rewindLocked() throws(ALError) {
        refreshLocked()
        pendingOffset = nil
        if let element {
            try send(.halt(voice: element))
            context.renderer.setEnabled(false, element: element)
        }
        stateValue = .initial
    }

    /// AL_LOOPING.
    public var isLooping: Bool {
        get { device.locked { looping } }
        set { try? setLooping(newValue) }
    }

    public func setLooping(_ on: Bool) throws(ALError) {
        try device.locked { () throws(ALError) in
            try checkLocked("isLooping")
            looping = on
            if let element { try send(.looping(voice: element, on)) }
            context.pushLocked()
        }
    }

    // MARK: Offsets

    /// AL_SAMPLE_OFFSET: the play position in sample frames from the start of the queue
    /// (0 while initial or stopped). Setting it while playing or paused moves there; while
    /// initial or stopped, the next play starts there. `invalidValue` past the queue's end.
    public var sampleOffset: Int {
        get { device.locked { offsetFramesLocked() } }
        set { try? setSampleOffset(newValue) }
    }

    /// AL_SEC_OFFSET, in seconds at the buffers' frequency.
    public var secondOffset: Float {
        get { device.locked { Float(offsetFramesLocked()) / Float(max(1, frequencyLocked())) } }
        set { try? setSecondOffset(newValue) }
    }

    /// AL_BYTE_OFFSET, in bytes of the buffers' format as given.
    public var byteOffset: Int {
        get { device.locked { offsetFramesLocked() * bytesPerFrameLocked() } }
        set { try? setByteOffset(newValue) }
    }

    public func setSampleOffset(_ frames: Int) throws(ALError) { try setOffset("sampleOffset", frames: frames) }

    public func setSecondOffset(_ seconds: Float) throws(ALError) {
        guard seconds.isFinite, seconds >= 0 else {
            try device.locked { () throws(ALError) in
                try checkLocked("secondOffset")
                throw context.recordLocked(.invalidValue, "ALSource.secondOffset \(seconds): must be finite and ≥ 0")
            }
            return
        }
        let frequency = device.locked { frequencyLocked() }
        try setOffset("secondOffset", frames: Int((Double(seconds) * Double(frequency)).rounded(.down)))
    }

    public func setByteOffset(_ bytes: Int) throws(ALError) {
        let size = device.locked { bytesPerFrameLocked() }
        try setOffset("byteOffset", frames: bytes < 0 ? -1 : bytes / max(1, size))
    }

    private func setOffset(_ name: String, frames: Int) throws(ALError) {
        try device.locked { () throws(ALError) in
            try checkLocked(name)
            refreshLocked()
            let total = totalFramesLocked()
            guard frames >= 0, frames < total else {
                throw context.recordLocked(.invalidValue, "ALSource.\(name): \(frames) frames is outside the queue's \(total)")
            }
            if stateValue == .playing || stateValue == .paused {
                try start(at: positionLocked(frames: frames), running: stateValue == .playing)
                context.pushLocked()
            } else {
                pendingOffset = frames
            }
        }
    }

    // MARK: Properties

    /// AL_PITCH (> 0; default 1). Pitch × doppler outside the mixer's 0.5…2 is resampled by the source's voice.
    public var pitch: Float {
        get { read(\.pitch) }
        set { try? setPitch(newValue) }
    }
    public func setPitch(_ value: Float) throws(ALError) { try set("pitch", value > 0 && value.isFinite) { $0.pitch = value } }

    /// AL_GAIN (≥ 0; default 1).
    public var gain: Float {
        get { read(\.gain) }
        set { try? setGain(newValue) }
    }
    public func setGain(_ value: Float) throws(ALError) { try set("gain", value >= 0 && value.isFinite) { $0.gain = value } }

    /// AL_MIN_GAIN (0…1; default 0).
    public var minGain: Float {
        get { read(\.minGain) }
        set { try? setMinGain(newValue) }
    }
    public func setMinGain(_ value: Float) throws(ALError) { try set("minGain", value >= 0 && value <= 1) { $0.minGain = value } }

    /// AL_MAX_GAIN (0…1; default 1).
    public var maxGain: Float {
        get { read(\.maxGain) }
        set { try? setMaxGain(newValue) }
    }
    public func setMaxGain(_ value: Float) throws(ALError) { try set("maxGain", value >= 0 && value <= 1) { $0.maxGain = value } }

    public var position: SIMD3<Float> {
        get { read(\.position) }
        set { try? setPosition(newValue) }
    }
    public func setPosition(_ value: SIMD3<Float>) throws(ALError) { try set("position", ALListener.isFinite(value)) { $0.position = value } }

    public var velocity: SIMD3<Float> {
        get { read(\.velocity) }
        set { try? setVelocity(newValue) }
    }
    public func setVelocity(_ value: SIMD3<Float>) throws(ALError) { try set("velocity", ALListener.isFinite(value)) { $0.velocity = value } }

    /// AL_DIRECTION (zero: omnidirectional).
    public var direction: SIMD3<Float> {
        get { read(\.direction) }
        set { try? setDirection(newValue) }
    }
    public func setDirection(_ value: SIMD3<Float>) throws(ALError) { try set("direction", ALListener.isFinite(value)) { $0.direction = value } }

    /// AL_SOURCE_RELATIVE.
    public var isRelative: Bool {
        get { read(\.isRelative) }
        set { try? setRelative(newValue) }
    }
    public func setRelative(_ on: Bool) throws(ALError) { try set("isRelative", true) { $0.isRelative = on } }

    /// AL_CONE_INNER_ANGLE (0…360 degrees; default 360).
    public var coneInnerAngle: Float {
        get { read(\.cone.innerAngle) }
        set { try? setConeInnerAngle(newValue) }
    }
    public func setConeInnerAngle(_ value: Float) throws(ALError) { try set("coneInnerAngle", value >= 0 && value <= 360) { $0.cone.innerAngle = value } }

    /// AL_CONE_OUTER_ANGLE (0…360 degrees; default 360).
    public var coneOuterAngle: Float {
        get { read(\.cone.outerAngle) }
        set { try? setConeOuterAngle(newValue) }
    }
    public func setConeOuterAngle(_ value: Float) throws(ALError) { try set("coneOuterAngle", value >= 0 && value <= 360) { $0.cone.outerAngle = value } }

    /// AL_CONE_OUTER_GAIN (0…1; default 0).
    public var coneOuterGain: Float {
        get { read(\.cone.outerGain) }
        set { try? setConeOuterGain(newValue) }
    }
    public func setConeOuterGain(_ value: Float) throws(ALError) { try set("coneOuterGain", value >= 0 && value <= 1) { $0.cone.outerGain = value } }

    /// AL_REFERENCE_DISTANCE (≥ 0; default 1).
    public var referenceDistance: Float {
        get { read(\.referenceDistance) }
        set { try? setReferenceDistance(newValue) }
    }
    public func setReferenceDistance(_ value: Float) throws(ALError) {
        try set("referenceDistance", value >= 0 && value.isFinite) { $0.referenceDistance = value }
    }

    /// AL_MAX_DISTANCE (≥ 0; default the largest float).
    public var maxDistance: Float {
        get { read(\.maxDistance) }
        set { try? setMaxDistance(newValue) }
    }
    public func setMaxDistance(_ value: Float) throws(ALError) { try set("maxDistance", value >= 0 && !value.isNaN) { $0.maxDistance = value } }

    /// AL_ROLLOFF_FACTOR (≥ 0; default 1).
    public var rolloffFactor: Float {
        get { read(\.rolloffFactor) }
        set { try? setRolloffFactor(newValue) }
    }
    public func setRolloffFactor(_ value: Float) throws(ALError) { try set("rolloffFactor", value >= 0 && value.isFinite) { $0.rolloffFactor = value } }

    /// What the mixer is given for this source now (gain, direction, rate).
    public var spatialization: ALSpatialization { device.locked { context.spatializationLocked(self) } }

    // MARK: Deletion

    /// Deletes the source (alDeleteSources): it stops and lets go of its buffers.
    public func delete() throws(ALError) {
        try device.locked { () throws(ALError) in
            try checkLocked("delete")
            deleteLocked()
            context.sources.removeAll { $0 === self }
            context.pushLocked()
        }
    }

    func deleteLocked() {
        if let element {
            _ = bank.send(.halt(voice: element))
            _ = bank.send(.queue(voice: element, entries: nil, count: 0, firstSequence: 0))
            if let snapshot { bank.retire(snapshot) }
            context.renderer.returnElement(element)
        }
        element = nil
        snapshot = nil
        for buffer in queueBuffers { buffer.useCount -= 1 }
        queueBuffers.removeAll()
        storages.removeAll()
        isDeleted = true
    }

    // MARK: Internals (under the device's lock)

    func read<T>(_ path: KeyPath<ALSourceProperties, T>) -> T {
        device.locked { properties[keyPath: path] }
    }

    func set(_ name: String, _ valid: Bool, _ body: (inout ALSourceProperties) -> Void) throws(ALError) {
        // One strong reference for the call: each read of the unowned `context` is an atomic
        // retain and release, slow ones (weak references to the context give it a side table),
        // and a setter read it five times (a visible share of a 256-source update).
        let context = self.context
        try context.device.locked { () throws(ALError) in
            try context.checkLiveLocked("ALSource.\(name)")
            if isDeleted { throw context.recordLocked(.invalidName, "ALSource.\(name): the source is deleted") }
            guard valid else { throw context.recordLocked(.invalidValue, "ALSource.\(name): invalid value") }
            body(&properties)
            context.sourceChangedLocked(self)
        }
    }

    func checkLocked(_ call: String) throws(ALError) {
        try context.checkLiveLocked("ALSource.\(call)")
        if isDeleted { throw context.recordLocked(.invalidName, "ALSource.\(call): the source is deleted") }
    }

    private func checkBufferLocked(_ buffer: ALBuffer, _ call: String) throws(ALError) {
        if buffer.isDeleted || buffer.device !== device {
            throw context.recordLocked(.invalidName, "ALSource.\(call): the buffer is deleted or belongs to another device")
        }
    }

    private func send(_ command: ALVoiceCommand) throws(ALError) {
        guard bank.send(command) else {
            throw context.recordLocked(.outOfMemory, "the context's command queue is full (is the device rendering?)")
        }
    }

    private func start(at position: (sequence: Int, frame: Double), running: Bool) throws(ALError) {
        guard let element else { return }
        generation += 1
        startPosition = position
        try send(.start(voice: element, generation: generation, sequence: position.sequence, frame: position.frame, running: running))
    }

    private func append(_ buffers: [ALBuffer]) {
        for buffer in buffers {
            buffer.useCount += 1
            queueBuffers.append(buffer)
            let channels = storages.first?.channels ?? buffer.storage?.channels ?? 1
            storages.append(buffer.storage ?? ALBufferStorage(frames: 0, channels: channels, frequency: device.frequency, format: .mono16))
        }
    }

    private func releaseQueueLocked() {
        for buffer in queueBuffers { buffer.useCount -= 1 }
        firstSequence += queueBuffers.count
        queueBuffers.removeAll()
        storages.removeAll()
    }

    /// Binds an input of the right kind (mono/stereo) and sends the voice its new queue.
    private func rebuildLocked() throws(ALError) {
        let channels = storages.first { $0.frames > 0 }?.channels
        let active = stateValue == .playing || stateValue == .paused
        if let current = element, channels.map({ context.renderer.isStereo(current) != ($0 == 2) }) ?? !active {
            // Another kind of input (or none) is needed.
            try send(.halt(voice: current))
            try send(.queue(voice: current, entries: nil, count: 0, firstSequence: 0))
            if let snapshot { bank.retire(snapshot) }
            snapshot = nil
            context.renderer.returnElement(current)
            element = nil
            if active { stateValue = .stopped }
        }
        if element == nil, let channels {
            guard let taken = context.renderer.takeElement(stereo: channels == 2) else {
                throw context.recordLocked(.outOfMemory, "no free \(channels == 2 ? "stereo" : "mono") source slot in the context")
            }
            element = taken
            rateScale = 1
            try send(.rateScale(voice: taken, 1))
            try send(.looping(voice: taken, looping))
            sendMixLocked()
        }
        guard let element else { return }
        let next = ALQueueSnapshot(storages: storages, firstSequence: firstSequence, deviceFrequency: device.frequency)
        try send(.queue(voice: element, entries: UnsafePointer(next.entries), count: next.count, firstSequence: firstSequence))
        if let snapshot { bank.retire(snapshot) }
        snapshot = next
    }

    /// Sends the mixer this source's parameters (and the voice its rate beyond the unit's range).
    func sendMixLocked() {
        guard let element else { return }
        let context = self.context  // one retain, not one per use (see `set`)
        let spatial = context.spatializationLocked(self)
        let renderer = context.renderer
        let scale = renderer.apply(spatial, effects: context.effectsMixLocked(self, spatial: spatial), element: element)
        if scale != rateScale, renderer.bank.send(.rateScale(voice: element, scale)) { rateScale = scale }
    }

    /// A playing source that reached its end is stopped.
    private func refreshLocked() {
        guard stateValue == .playing, let element, bank.hasEnded(element, generation: generation) else { return }
        stateValue = .stopped
        context.renderer.setEnabled(false, element: element)
    }

    private func totalFramesLocked() -> Int { storages.reduce(0) { $0 + $1.frames } }
    private func frequencyLocked() -> Int { storages.first { $0.frames > 0 }?.frequency ?? 0 }
    private func bytesPerFrameLocked() -> Int { storages.first { $0.frames > 0 }?.format.bytesPerFrame ?? 0 }

    /// (sequence, frame) of the frame `frames` from the start of the queue.
    private func positionLocked(frames: Int) -> (sequence: Int, frame: Double) {
        var left = frames
        for (index, storage) in storages.enumerated() {
            if left < storage.frames { return (firstSequence + index, Double(left)) }
            left -= storage.frames
        }
        return (firstSequence + storages.count, 0)
    }

    /// The published (or just commanded) play position: queue index and frame in it.
    private func cursorLocked() -> (index: Int, frame: Int) {
        guard let element else { return (0, 0) }
        let sequence: Int
        let frame: Int
        if let published = bank.cursor(element, generation: generation) {
            let delta = Int(Int32(bitPattern: published.sequence &- UInt32(truncatingIfNeeded: firstSequence)))
            sequence = firstSequence + delta
            frame = published.frame
        } else {
            sequence = startPosition.sequence
            frame = Int(startPosition.frame)
        }
        let index = min(max(sequence - firstSequence, 0), storages.count)
        return (index, index < storages.count ? min(frame, storages[index].frames) : 0)
    }

    private func currentIndexLocked() -> Int {
        refreshLocked()
        switch stateValue {
        case .initial: return 0
        case .stopped: return storages.count
        case .playing, .paused: return cursorLocked().index
        }
    }

    private func processedLocked() -> Int {
        refreshLocked()
        guard kind == .streaming, !looping else { return 0 }
        return min(currentIndexLocked(), queueBuffers.count)
    }

    private func offsetFramesLocked() -> Int {
        refreshLocked()
        guard stateValue == .playing || stateValue == .paused else { return 0 }
        let (index, frame) = cursorLocked()
        guard index < storages.count else { return 0 }
        return storages.prefix(index).reduce(0) { $0 + $1.frames } + frame
    }
}
