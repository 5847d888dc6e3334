import SonoraCore
import SonoraDSP
import SonoraUnits

/// A slot's effect made ready to render, off the realtime thread: its unit given the
/// context's rate, mono (or stereo) in from the slot's bus, stereo (or mono) out, and
/// initialized. The render side reaches it only through `state` (raw memory). Owned by the
/// slot; when replaced it is retired until the render side has let go of it.
final class ALEffectInstance: @unchecked Sendable {
    let unit: AudioUnit?
    let state: UnsafeMutablePointer<ALEffectRenderState>
    private let output: OwnedAudioBufferList?

    /// Dedicated dialogue: a routing, no unit.
    init(dialogueGain: Float) {
        unit = nil
        output = nil
        state = .allocate(capacity: 1)
        state.initialize(to: ALEffectRenderState(unit: nil, output: nil, inputChannels: 1, dialogueGain: dialogueGain))
    }

    /// `unit` set up for the slot: `invalidOperation` (with the unit's reason noted) when no
    /// layout works — mono in and stereo out, stereo in and out, mono in and out, tried in
    /// that order, each up to a successful initialize.
    init(unit: AudioUnit, frequency: Int, maximumFrames: Int) throws(ALError) {
        self.unit = unit
        let rate = Double(frequency)
        if unit.isInitialized { unit.uninitialize() }
        state = .allocate(capacity: 1)
        state.initialize(to: ALEffectRenderState(unit: Unmanaged.passUnretained(unit), output: nil, inputChannels: 1, dialogueGain: 0))
        var made: OwnedAudioBufferList?
        var reason = "\(unit.name) takes neither mono nor stereo at \(frequency) Hz"
        for (inputs, outputs) in [(1, 2), (2, 2), (1, 1)] where made == nil {
            do throws(AudioError) {
                try unit.setStreamFormat(.canonical(sampleRate: rate, channels: inputs), scope: .input, element: 0)
                try unit.setStreamFormat(.canonical(sampleRate: rate, channels: outputs), scope: .output, element: 0)
                try unit.setMaximumFramesPerSlice(maximumFrames)
                try unit.setRenderCallback(
                    RenderCallback(function: ALEffectRenderState.callback, context: UnsafeMutableRawPointer(state)), input: 0)
                try unit.initialize()
                let list = try OwnedAudioBufferList(channelCount: outputs, frameCapacity: maximumFrames)
                state.pointee.output = list.list
                state.pointee.inputChannels = inputs
                made = list
            } catch {
                reason = "\(unit.name): \(error.message)"
            }
        }
        guard let made else {
            state.deinitialize(count: 1)
            state.deallocate()
            ALDevice.noteOpenFailure("ALAuxiliaryEffectSlot: \(reason)")
            throw .invalidOperation
        }
        output = made
        // Warm the render path (first calls may allocate metadata) before the realtime side sees it.
        let silence = [Float](repeating: 0, count: maximumFrames)
        silence.withUnsafeBufferPointer { samples in
            state.pointee.input = samples.baseAddress
            _ = state.pointee.renderUnit(frames: min(256, maximumFrames), list: made.list)
            state.pointee.input = nil
        }
        unit.reset()
    }

    deinit {
        unit?.uninitialize()
        state.deinitialize(count: 1)
        state.deallocate()
    }
}

/// What the render side runs for one slot's effect (no allocation, locks or reference counting).
struct ALEffectRenderState {
    let unit: Unmanaged<AudioUnit>?
    var output: AudioBufferList?
    var inputChannels: Int
    let dialogueGain: Float
    /// The slot's bus for this render (set just before the unit pulls it).
    var input: UnsafePointer<Float>?
    var sampleTime: Double = 0

    init(unit: Unmanaged<AudioUnit>?, output: AudioBufferList?, inputChannels: Int, dialogueGain: Float) {
        self.unit = unit
        self.output = output
        self.inputChannels = inputChannels
        self.dialogueGain = dialogueGain
    }

    /// The unit's input: the slot's bus on every channel it asks for.
    static let callback: RenderCallback.Function = { context, request in
        let state = context.unsafelyUnwrapped.assumingMemoryBound(to: ALEffectRenderState.self)
        let request = request.assumingMemoryBound(to: RenderRequest.self)
        let buffers = request.pointee.buffers
        let frames = request.pointee.frameCount
        for channel in 0..<buffers.channelCount {
            if let input = state.pointee.input {
                buffers.samples(channel).update(from: input, count: frames)
            } else {
                buffers.samples(channel).update(repeating: 0, count: frames)
            }
        }
        return 0
    }

    mutating func renderUnit(frames: Int, list: AudioBufferList) -> AudioError.Code {
        guard let unit else { return .noError }
        var flags = RenderActionFlags()
        let time = AudioTimeStamp(sampleTime: sampleTime)
        sampleTime += Double(frames)
        return unit._withUnsafeGuaranteedRef {
            $0.render(flags: &flags, timeStamp: time, bus: 0, frameCount: frames, into: list.frames(from: 0, count: frames))
        }
    }

    /// Runs the effect on `input` (`frames` of the slot's bus) and adds it, at `gain`, into
    /// `destination` (2, 4 or 6 channels: front pair, then L R C LFE Ls Rs order for 5.1).
    mutating func render(input: UnsafePointer<Float>, frames: Int, gain: Float, into destination: AudioBufferList) {
        let channels = destination.channelCount
        guard let output else {
            // Dedicated dialogue: the centre channel of 5.1, else the front pair at −3 dB.
            let level = gain * dialogueGain
            if channels == 6 {
                Mixing.add(input, into: destination.samples(2), count: frames, gain: level)
            } else {
                Mixing.add(input, into: destination.samples(0), count: frames, gain: level * 0.70710678)
                Mixing.add(input, into: destination.samples(1), count: frames, gain: level * 0.70710678)
            }
            return
        }
        self.input = input
        let status = renderUnit(frames: frames, list: output)
        self.input = nil
        guard status == .noError else { return }
        let left = UnsafePointer(output.samples(0))
        let right = UnsafePointer(output.samples(output.channelCount > 1 ? 1 : 0))
        let side: Float = output.channelCount > 1 ? 1 : 0.70710678
        if channels <= 2 {
            Mixing.add(left, into: destination.samples(0), count: frames, gain: gain * side)
            Mixing.add(right, into: destination.samples(1), count: frames, gain: gain * side)
        } else {
            // 4.0 and 5.1: the effect's pair on the front and on the surrounds (the last two), each at −3 dB.
            let half = gain * side * 0.70710678
            Mixing.add(left, into: destination.samples(0), count: frames, gain: half)
            Mixing.add(right, into: destination.samples(1), count: frames, gain: half)
            Mixing.add(left, into: destination.samples(channels - 2), count: frames, gain: half)
            Mixing.add(right, into: destination.samples(channels - 1), count: frames, gain: half)
        }
    }
}
