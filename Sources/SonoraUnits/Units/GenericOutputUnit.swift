import SonoraCore

/// The generic output unit ('auou'/'genr'): the head of an offline graph. It
/// passes its input through; `renderOffline` pulls as fast as asked.
public final class GenericOutputUnit: AudioUnit, @unchecked Sendable {
    public static let componentDescription = AudioComponentDescription(type: .outputUnit, subType: "genr", manufacturer: .apple)

    public override var hasChannelLayouts: Bool { true }

    public init() {
        super.init(description: Self.componentDescription, name: "GenericOutput", inputs: 1, outputs: 1)
    }

    /// Renders `frameCount` frames in slices of at most MaximumFramesPerSlice,
    /// starting at `startSampleTime`, handing each rendered slice to `consume`
    /// (not realtime: the slice buffer is allocated per call). The arguments come in
    /// the order `AudioGraph.renderOffline` takes them.
    public func renderOffline(
        frameCount: Int, sliceFrames: Int? = nil, startSampleTime: Double = 0,
        consume: (AudioBufferList) throws -> Void
    ) throws {
        guard isInitialized else { throw AudioError(.uninitialized, "\(name) must be initialized before rendering") }
        let slice = min(sliceFrames ?? maximumFramesPerSlice, maximumFramesPerSlice)
        guard slice > 0 else { throw AudioError(.invalidPropertyValue, "slice of \(slice) frames") }
        let format = try streamFormat(scope: .output, element: 0)
        let buffers = try OwnedAudioBufferList(channelCount: Int(format.channelsPerFrame), frameCapacity: slice)
        var done = 0
        while done < frameCount {
            let frames = min(slice, frameCount - done)
            var flags = RenderActionFlags()
            let stamp = AudioTimeStamp(sampleTime: startSampleTime + Double(done))
            let status = render(flags: &flags, timeStamp: stamp, bus: 0, frameCount: frames, into: buffers.list(frameCount: frames))
            guard status == .noError else {
                throw AudioError(status, "\(name): render at sample \(Int(startSampleTime) + done) failed")
            }
            try consume(buffers.list(frameCount: frames))
            done += frames
        }
    }

    /// Renders `frameCount` frames into arrays, one per channel.
    public func renderOffline(frameCount: Int, sliceFrames: Int? = nil, startSampleTime: Double = 0) throws -> [[Float]] {
        let channels = Int(try streamFormat(scope: .output, element: 0).channelsPerFrame)
        var result = Array(repeating: [Float](), count: channels)
        for channel in 0..<channels { result[channel].reserveCapacity(frameCount) }
        try renderOffline(frameCount: frameCount, sliceFrames: sliceFrames, startSampleTime: startSampleTime) { list in
            for channel in 0..<channels { result[channel].append(contentsOf: list[channel]) }
        }
        return result
    }

    // The earlier argument order, kept so existing callers still compile.
    @available(*, deprecated, message: "pass sliceFrames before startSampleTime, as AudioGraph.renderOffline takes them")
    public func renderOffline(
        frameCount: Int, startSampleTime: Double, sliceFrames: Int?, consume: (AudioBufferList) throws -> Void
    ) throws {
        try renderOffline(frameCount: frameCount, sliceFrames: sliceFrames, startSampleTime: startSampleTime, consume: consume)
    }

    @available(*, deprecated, message: "pass sliceFrames before startSampleTime, as AudioGraph.renderOffline takes them")
    public func renderOffline(frameCount: Int, startSampleTime: Double, sliceFrames: Int?) throws -> [[Float]] {
        try renderOffline(frameCount: frameCount, sliceFrames: sliceFrames, startSampleTime: startSampleTime)
    }
}
