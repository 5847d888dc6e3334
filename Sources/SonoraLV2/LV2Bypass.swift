import SonoraCore
import SonoraUnits

/// BypassEffect for an LV2 unit, on the realtime side.
///
/// A plugin with an `lv2:enabled` control gets bypass through it (it fades itself, as the
/// LV2 spec intends). Otherwise the host crossfades main output channel c between the
/// plugin's output and main input channel c over `crossfadeFrames`, the dry signal delayed
/// by the plugin's reported latency so both paths line up. The plugin keeps running while
/// bypassed, so un-bypassing is seamless too.
struct LV2Bypass {
    static let crossfadeFrames = 256
    /// Frames of input history per channel (a power of two); latencies beyond it are not compensated.
    static let historyFrames = 1 << 15

    var enabledPort: Int32
    var latencyPort: Int32
    /// 0 = plugin output, 1 = dry input.
    var mix: Float
    var channels: Int
    /// Per main input channel: the last `historyFrames` input samples, written at `writePosition`.
    var history: UnsafeMutablePointer<Float>?
    var writePosition: Int

    /// Keeps the dry history (only when the plugin can report latency: otherwise the input is used directly).
    mutating func record(_ input: AudioBufferList) {
        guard let history else { return }
        // At most two block copies per channel (before and after the line's wrap), not a
        // masked store per frame: this runs every render of a plugin with a latency port.
        let frames = min(input.frameCount, Self.historyFrames)
        let skipped = input.frameCount - frames
        let start = (writePosition + skipped) & (Self.historyFrames - 1)
        let firstCount = min(frames, Self.historyFrames - start)
        for channel in 0..<min(channels, input.channelCount) {
            let line = history + channel * Self.historyFrames
            let samples = UnsafePointer(input.samples(channel)) + skipped
            (line + start).update(from: samples, count: firstCount)
            if frames > firstCount { line.update(from: samples + firstCount, count: frames - firstCount) }
        }
        writePosition += input.frameCount
    }

    /// Crossfades `output` towards dry (`bypassed`) or wet, frame by frame.
    mutating func apply(bypassed: Bool, output: AudioBufferList, input: AudioBufferList?, latency: Int) {
        let target: Float = bypassed ? 1 : 0
        guard mix != target || bypassed else { return }
        let step = 1 / Float(Self.crossfadeFrames)
        let mask = Self.historyFrames - 1
        let delay = min(max(latency, 0), Self.historyFrames - output.frameCount)
        let start = mix
        var end = start
        for channel in 0..<output.channelCount {
            let samples = output.samples(channel)
            var m = start
            let dryChannel = min(channel, (input?.channelCount ?? 1) - 1)
            for frame in 0..<output.frameCount {
                m = bypassed ? min(1, m + step) : max(0, m - step)
                let dry: Float
                if let history, delay > 0, channel < channels {
                    // The frame written `delay` frames before this one (record() ran for this slice already).
                    dry = history[dryChannel * Self.historyFrames + ((writePosition - output.frameCount + frame - delay) & mask)]
                } else if let input, input.channelCount > 0 {
                    dry = input.samples(dryChannel)[frame]
                } else {
                    dry = 0
                }
                samples[frame] = samples[frame] * (1 - m) + dry * m
            }
            end = m
        }
        mix = end
    }
}
