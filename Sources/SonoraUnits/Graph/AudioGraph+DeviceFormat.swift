import SonoraCore

/// Following the device's format: when the device under the graph's I/O unit changes its
/// rate or period while running (a JACK server's new buffer size or rate), the graph is
/// re-initialized at it — on the device's control thread, while the device calls no cycle
/// (`AudioDevice.setFormatChangeHandler`) — and rendering resumes at the new format.
extension AudioGraph {
    /// Uninitializes every unit, moves each element at the device's old rate to the new one,
    /// grows every unit's MaximumFramesPerSlice to the new period (never shrinks it), and
    /// initializes again; a running graph is running again afterwards. Called only by the
    /// head I/O unit while its device is paused for the change.
    func follow(deviceRate old: Double, to new: Double, periodFrames: Int) throws(AudioError) {
        let running = isRunning
        uninitialize()
        for node in units.keys.sorted() {
            try units[node]!.follow(deviceRate: old, to: new, periodFrames: periodFrames)
        }
        try initialize()
        if running { try start() }
    }
}

extension AudioUnit {
    /// Uninitialized, off the realtime thread: every element at `old` Hz takes `new` Hz (an
    /// element at another rate — a converter's far side — keeps it), and MaximumFramesPerSlice
    /// grows to at least `periodFrames`. Property listeners hear of each change.
    func follow(deviceRate old: Double, to new: Double, periodFrames: Int) throws(AudioError) {
        if old != new {
            for element in inputs.indices where inputs[element].format.sampleRate == old {
                var format = inputs[element].format
                format.sampleRate = new
                try setStreamFormat(format, scope: .input, element: element)
            }
            for element in outputs.indices where outputs[element].format.sampleRate == old {
                var format = outputs[element].format
                format.sampleRate = new
                try setStreamFormat(format, scope: .output, element: element)
            }
        }
        if maximumFramesPerSlice < periodFrames { try setMaximumFramesPerSlice(periodFrames) }
    }
}
