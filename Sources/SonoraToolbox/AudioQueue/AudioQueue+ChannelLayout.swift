import SonoraCore
import SonoraUnits

/// kAudioQueueProperty_ChannelLayout: what each of the queue's channels carries.
///
/// The queue stores and reports the layout; it does not reorder channels. A layout whose
/// order differs from the output's is the program's statement about its data: the queue
/// plays channel n to output channel n, as it does without a layout.
extension AudioQueue {
    /// The layout the program set, nil until then.
    public var channelLayout: AudioChannelLayout? { try? withLock { channelLayoutValue } }

    /// Sets the layout; it must describe the queue's channel count.
    public func setChannelLayout(_ layout: AudioChannelLayout) throws(AudioError) {
        let call = "setChannelLayout"
        try withLock { () throws(AudioError) in
            try requireOpen(call)
            let channels = Int(format.channelsPerFrame)
            guard layout.channelCount == channels else {
                throw error(.queueInvalidPropertyValue, call, "the layout \(layout) describes \(layout.channelCount) channels, the queue has \(channels)")
            }
            channelLayoutValue = layout
        }
        notify(.channelLayout)
    }
}
