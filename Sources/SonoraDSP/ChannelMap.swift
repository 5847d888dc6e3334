import SonoraCore

/// Which input channel feeds each output channel, shared by every converter
/// (the converter unit, AudioConverter, ExtAudioFile). An entry is an input
/// channel, `ChannelMap.silence` or `ChannelMap.average` (the mean of all inputs).
public enum ChannelMap {
    public static let silence = -1
    public static let average = -2

    /// The map for `inputs` → `outputs` channels: `explicit` if given (checked),
    /// else the default — the same channels in order; one input to every output;
    /// many inputs averaged into one output; otherwise channel for channel, silence beyond.
    public static func sources(inputs: Int, outputs: Int, explicit: [Int]? = nil) throws(AudioError) -> [Int] {
        if let explicit {
            guard explicit.count == outputs, explicit.allSatisfy({ $0 >= silence && $0 < inputs }) else {
                throw AudioError(
                    .converterPropertyNotSupported,
                    "channel map \(explicit) does not fit \(inputs) → \(outputs) channels (entries −1…\(inputs - 1), one per output)")
            }
            return explicit
        }
        if inputs == 1 { return Array(repeating: 0, count: outputs) }
        if outputs == 1 && inputs > 1 { return [average] }
        return (0..<outputs).map { $0 < inputs ? $0 : silence }
    }

    /// Writes `frames` frames of `output` from `input` through `sources` (one entry per output channel). Realtime-safe.
    @inlinable
    public static func apply(
        _ sources: UnsafePointer<Int>, from input: AudioBufferList, to output: AudioBufferList, frames: Int
    ) {
        for channel in 0..<output.channelCount {
            let destination = output.samples(channel)
            let source = sources[channel]
            if source >= 0 {
                copySamples(from: input.samples(source), to: destination, count: frames)
            } else if source == average {
                let gain = 1 / Float(input.channelCount)
                Mixing.copy(input.samples(0), to: destination, count: frames, gain: gain)
                for other in 1..<input.channelCount {
                    Mixing.add(input.samples(other), into: destination, count: frames, gain: gain)
                }
            } else {
                destination.update(repeating: 0, count: frames)
            }
        }
    }
}
