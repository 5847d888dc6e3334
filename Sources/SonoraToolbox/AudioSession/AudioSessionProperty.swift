/// The session's properties (kAudioSessionProperty_… / AVAudioSession's), for
/// `addPropertyListener`. Listeners exist for the values the hardware (or the appliance)
/// changes under the program — the current ones; the preferred values are the program's own
/// and other-audio-playing is read when needed (Audio Session Services has no listener for
/// it either).
public enum AudioSessionProperty: String, Sendable, Hashable, CaseIterable {
    case preferredSampleRate
    case sampleRate
    case preferredIOBufferDuration
    case ioBufferDuration
    case inputNumberOfChannels
    case outputNumberOfChannels
    case isInputAvailable
    case currentRoute
    case isOtherAudioPlaying
    case outputVolume

    /// Whether `addPropertyListener` takes this property.
    public var isListenable: Bool {
        switch self {
        case .preferredSampleRate, .preferredIOBufferDuration, .isOtherAudioPlaying: false
        default: true
        }
    }
}

/// A listener's registration: give it to `removeListener` to stop it.
public struct AudioSessionListenerToken: Hashable, Sendable {
    let id: Int
}

/// The values the property listeners watch, read together.
struct AudioSessionSnapshot: Equatable {
    var sampleRate: Double
    var ioBufferDuration: Double
    var inputNumberOfChannels: Int
    var outputNumberOfChannels: Int
    var isInputAvailable: Bool
    var currentRoute: AudioSessionRoute
    var outputVolume: Float

    /// The listenable properties that differ between two readings.
    func changes(from old: AudioSessionSnapshot) -> [AudioSessionProperty] {
        var changed: [AudioSessionProperty] = []
        if sampleRate != old.sampleRate { changed.append(.sampleRate) }
        if ioBufferDuration != old.ioBufferDuration { changed.append(.ioBufferDuration) }
        if inputNumberOfChannels != old.inputNumberOfChannels { changed.append(.inputNumberOfChannels) }
        if outputNumberOfChannels != old.outputNumberOfChannels { changed.append(.outputNumberOfChannels) }
        if isInputAvailable != old.isInputAvailable { changed.append(.isInputAvailable) }
        if currentRoute != old.currentRoute { changed.append(.currentRoute) }
        if outputVolume != old.outputVolume { changed.append(.outputVolume) }
        return changed
    }
}
