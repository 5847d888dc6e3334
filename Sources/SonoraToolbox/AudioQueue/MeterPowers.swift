/// What `updateMeters` read for AVAudioPlayer- and AVAudioRecorder-style meters: each
/// channel's average and peak power in dBFS, −160 … 0 (−160 for silence or no such channel).
struct MeterPowers {
    private var levels: [AudioQueueLevel]

    init(channels: Int) {
        levels = Array(repeating: AudioQueueLevel(average: -160, peak: -160), count: channels)
    }

    /// Takes a queue's `currentLevelMeterDB` reading.
    mutating func update(_ decibels: [AudioQueueLevel]) { levels = decibels }

    func average(_ channel: Int) -> Float { channel >= 0 && channel < levels.count ? Self.clamped(levels[channel].average) : -160 }
    func peak(_ channel: Int) -> Float { channel >= 0 && channel < levels.count ? Self.clamped(levels[channel].peak) : -160 }

    private static func clamped(_ decibels: Float) -> Float { decibels.isFinite ? min(max(decibels, -160), 0) : -160 }
}
