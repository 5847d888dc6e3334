import SonoraCore
import SonoraUnits

/// Feeds input elements of a unit from arrays of samples (one array per channel),
/// by sample time — the source of an offline render.
final class ArrayInput: RenderCallbackTarget {
    let channels: [[Float]]
    init(_ channels: [[Float]]) { self.channels = channels }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let buffers = request.pointee.buffers
        let start = Int(request.pointee.timeStamp.sampleTime)
        let frames = request.pointee.frameCount
        for channel in 0..<buffers.channelCount {
            let destination = buffers.samples(channel)
            let source = channels[min(channel, channels.count - 1)]
            let available = max(0, min(frames, source.count - start))
            source.withUnsafeBufferPointer { samples in
                if available > 0 { destination.update(from: samples.baseAddress! + start, count: available) }
            }
            if available < frames { (destination + available).update(repeating: 0, count: frames - available) }
        }
        return .noError
    }
}

extension LV2Unit {
    /// Renders `inputs` (per input element, per channel; an element given one channel
    /// feeds all its channels) through the plugin in blocks of `blockSize` frames and
    /// returns every output element's channels. `frameCount` defaults to the inputs'
    /// length (for generators, pass it). The unit is (re)initialized for the render and
    /// stays initialized, so control outputs and latency can be read afterwards
    /// (`uninitialize()` when done). `beforeBlock` runs on this thread before each block
    /// (parameter changes, MIDI).
    public func renderOffline(
        inputs: [[[Float]]], frameCount: Int? = nil, blockSize: Int,
        beforeBlock: ((_ block: Int, _ startFrame: Int) throws(AudioError) -> Void)? = nil
    ) throws(AudioError) -> [[[Float]]] {
        guard blockSize > 0 && blockSize <= 65536 else {
            throw AudioError(.invalidPropertyValue, "block size \(blockSize) is outside 1…65536")
        }
        guard inputs.count == elementCount(.input) else {
            throw AudioError(.invalidElement, "\(name) takes \(elementCount(.input)) input elements, given \(inputs.count)")
        }
        let total = frameCount ?? inputs.flatMap { $0 }.map(\.count).max() ?? 0
        if isInitialized { uninitialize() }
        if maximumFramesPerSlice < blockSize { try setMaximumFramesPerSlice(blockSize) }
        for (element, channels) in inputs.enumerated() {
            guard !channels.isEmpty else { throw AudioError(.invalidPropertyValue, "input element \(element) has no channels") }
            try setRenderCallback(ArrayInput(channels), input: element)
        }
        try initialize()
        let outputs = try (0..<elementCount(.output)).map { element throws(AudioError) in
            try OwnedAudioBufferList(
                channelCount: Int(try streamFormat(scope: .output, element: element).channelsPerFrame),
                frameCapacity: blockSize)
        }
        var result = outputs.map { [[Float]](repeating: [], count: $0.list.channelCount) }
        for index in result.indices {
            for channel in result[index].indices { result[index][channel].reserveCapacity(total) }
        }
        var position = 0
        var block = 0
        while position < total {
            let frames = min(blockSize, total - position)
            try beforeBlock?(block, position)
            for (element, output) in outputs.enumerated() {
                var flags = RenderActionFlags()
                let status = render(
                    flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(position)), bus: element,
                    frameCount: frames, into: output.list)
                guard status == .noError else {
                    throw AudioError(status, "\(name): render of output \(element) at frame \(position) failed")
                }
                for channel in 0..<output.list.channelCount {
                    result[element][channel].append(
                        contentsOf: UnsafeBufferPointer(start: output.list.samples(channel), count: frames))
                }
            }
            position += frames
            block += 1
        }
        drainLog()
        refreshLatency()
        return result
    }
}
