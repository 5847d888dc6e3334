import SonoraCore
import SonoraDSP
import SonoraUnits
import Synchronization

/// A context's render side: one 3D mixer unit (`aumx/3dem/appl`) whose input elements are
/// the sources' voices — the first `monoCount` mono, the rest stereo (OpenAL plays stereo
/// buffers unspatialized). The API feeds each input the final gain (dB), azimuth, elevation,
/// distance and playback rate it computed; the unit's own distance attenuation is off.
final class ALContextRenderer: @unchecked Sendable {
    /// Core Audio's k3DMixerParam_… IDs (input scope).
    enum Parameter {
        static let azimuth: AudioUnitParameterID = 0
        static let elevation: AudioUnitParameterID = 1
        static let distance: AudioUnitParameterID = 2
        static let gain: AudioUnitParameterID = 3
        static let playbackRate: AudioUnitParameterID = 4
        static let enable: AudioUnitParameterID = 5
    }
    static let mixerDescription = AudioComponentDescription(type: .mixer, subType: "3dem", manufacturer: .apple)
    /// The unit's playback-rate range; pitch × doppler outside it is done by the voice.
    static let rateRange: ClosedRange<Float> = 0.5...2
    /// The highest pitch × doppler a source plays at (OpenAL Soft's limit).
    static let maximumRate: Float = 255

    let mixer: AudioUnit
    let bank: ALVoiceBank
    let monoCount: Int
    let stereoCount: Int
    private let output: OwnedAudioBufferList
    /// The output's buffers, held as a value so the render side touches no reference.
    private let outputList: AudioBufferList
    private let mixerReference: Unmanaged<AudioUnit>
    private let bankReference: Unmanaged<ALVoiceBank>
    /// Suspended contexts are not rendered: their sources stay where they are.
    let suspended = Atomic<Bool>(false)
    @exclusivity(unchecked) private var sampleTime: Double = 0

    // Control side.
    private var freeElements: [Int]
    /// What each input was last given (parameters are sent only when they change).
    private var sent: [SIMD8<Float>]

    init(frequency: Int, channels: Int, monoSources: Int, stereoSources: Int, maximumFrames: Int) throws(ALError) {
        monoCount = monoSources
        stereoCount = stereoSources
        let inputs = monoSources + stereoSources
        do {
            mixer = try AudioComponentRegistry.shared.instantiate(Self.mixerDescription)
            bank = try ALVoiceBank(count: inputs)
            output = try OwnedAudioBufferList(channelCount: channels, frameCapacity: maximumFrames)
            try mixer.setElementCount(inputs, scope: .input)
            let rate = Double(frequency)
            try mixer.setStreamFormat(.canonical(sampleRate: rate, channels: channels), scope: .output, element: 0)
            for element in 0..<inputs {
                try mixer.setStreamFormat(.canonical(sampleRate: rate, channels: element < monoSources ? 1 : 2), scope: .input, element: element)
                try mixer.setRenderCallback(
                    RenderCallback(function: ALVoice.callback, context: UnsafeMutableRawPointer(bank.voices + element)), input: element)
            }
            try mixer.setMaximumFramesPerSlice(maximumFrames)
            try Self.configureInputs(mixer, count: inputs, stereoFrom: monoSources)
            try mixer.initialize()
            for element in 0..<inputs {
                _ = try mixer.setParameter(Parameter.enable, scope: .input, element: element, to: 0)
            }
        } catch {
            ALDevice.noteOpenFailure("ALContext: the 3D mixer (\(Self.mixerDescription)) for \(inputs) sources: \(error.message)")
            throw .outOfMemory
        }
        outputList = output.list
        mixerReference = Unmanaged.passUnretained(mixer)
        bankReference = Unmanaged.passUnretained(bank)
        freeElements = Array((0..<inputs).reversed())
        sent = Array(repeating: SIMD8(repeating: .nan), count: inputs)
    }

    deinit { mixer.uninitialize() }

    /// The unit's distance attenuation and doppler off (the API computes both); stereo
    /// inputs pass through.
    private static func configureInputs(_ mixer: AudioUnit, count: Int, stereoFrom: Int) throws(AudioError) {
        // Filled in against the mixer unit's property values (renderingFlags 3003, spatializationAlgorithm 3000).
    }

    // MARK: Elements

    /// A free input of the kind (mono/stereo), or nil.
    func takeElement(stereo: Bool) -> Int? {
        guard let index = freeElements.lastIndex(where: { ($0 >= monoCount) == stereo }) else { return nil }
        return freeElements.remove(at: index)
    }

    func returnElement(_ element: Int) {
        setEnabled(false, element: element)
        sent[element] = SIMD8(repeating: .nan)
        freeElements.append(element)
    }

    func isStereo(_ element: Int) -> Bool { element >= monoCount }

    // MARK: Parameters (control side)

    func setEnabled(_ on: Bool, element: Int) {
        let value: Float = on ? 1 : 0
        guard sent[element][5] != value else { return }
        sent[element][5] = value
        _ = try? mixer.setParameter(Parameter.enable, scope: .input, element: element, to: value)
    }

    /// Sends the source's mix parameters to its input (those that changed); returns the
    /// rate scale the voice must apply beyond the unit's range.
    func apply(_ spatial: ALSpatialization, element: Int) -> Double {
        let total = min(max(spatial.rate.isNaN ? 1 : spatial.rate, 0), Self.maximumRate)
        let unitRate = min(max(total, Self.rateRange.lowerBound), Self.rateRange.upperBound)
        let stereo = isStereo(element)
        let values: [(Int, AudioUnitParameterID, Float)] = [
            (0, Parameter.azimuth, stereo ? 0 : spatial.azimuth),
            (1, Parameter.elevation, stereo ? 0 : spatial.elevation),
            (2, Parameter.distance, min(spatial.distance, 10000)),
            (3, Parameter.gain, min(spatial.gainDecibels, 20)),
            (4, Parameter.playbackRate, unitRate),
        ]
        for (slot, id, value) in values where sent[element][slot] != value {
            sent[element][slot] = value
            _ = try? mixer.setParameter(id, scope: .input, element: element, to: value)
        }
        return Double(total / unitRate)
    }

    // MARK: Render side

    /// Renders the context's mix and adds it into `output` (realtime).
    func render(adding destination: AudioBufferList, frameCount: Int) {
        guard !suspended.load(ordering: .acquiring) else { return }
        bankReference._withUnsafeGuaranteedRef { $0.applyCommands() }
        let list = outputList.frames(from: 0, count: frameCount)
        var flags = RenderActionFlags()
        let status = mixerReference._withUnsafeGuaranteedRef {
            $0.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: sampleTime), bus: 0, frameCount: frameCount, into: list)
        }
        sampleTime += Double(frameCount)
        guard status == .noError else { return }
        for channel in 0..<min(list.channelCount, destination.channelCount) {
            Mixing.add(UnsafePointer(list.samples(channel)), into: destination.samples(channel), count: frameCount, gain: 1)
        }
    }
}
