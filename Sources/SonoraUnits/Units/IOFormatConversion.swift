import SonoraCore
import SonoraDSP

/// The I/O unit's playback conversion (RemoteIO's): the graph renders element 0 at the
/// client rate in fixed slices, its client channels mapped to the device's as element 0
/// renders (`channelSources`, `ChannelMap`'s default: mono to every channel, many to one
/// averaged); libsoxr brings each slice to the device rate into a small FIFO, and every
/// cycle takes exactly one device period from it.
///
/// Everything is allocated and the resampler warmed up (libsoxr allocates on its first
/// calls) before the device starts; `play` runs on the I/O thread without allocating,
/// locking or reference counting (the buffers are held as raw views).
final class IOPlaybackConversion: @unchecked Sendable {
    /// libsoxr's recipe for both directions: Low (16-bit; a 22,050 Hz client's tones to 7 kHz
    /// come back within 0.5 dB through both directions) adds about 1.5 ms each way, where
    /// Medium and High add about 20 ms in this streaming use (measured by the conversion tests).
    static let quality = Resampler.Quality.low
    let sliceFrames: Int
    /// Device frames the conversion adds: the filter's delay plus the FIFO's mean fill (half a slice).
    let latencyFrames: Double
    private let resampler: Resampler
    private let resamplerRef: Unmanaged<Resampler>
    private let sliceOwner: OwnedAudioBufferList
    private let fifoOwner: OwnedAudioBufferList
    private let slice: AudioBufferList
    private let fifo: AudioBufferList
    /// For each device channel, the client channel (or `ChannelMap` code) it plays.
    let channelSources: UnsafeMutablePointer<Int>
    private var fifoFrames = 0
    private var pendingOffset = 0
    private var pendingFrames = 0
    /// Sample time of the next slice, in client frames.
    private(set) var clientSampleTime: Double = 0

    init(clientRate: Double, deviceRate: Double, clientChannels: Int, deviceChannels: Int, periodFrames: Int) throws(AudioError) {
        sliceFrames = Int((Double(periodFrames) * clientRate / deviceRate).rounded(.up))
        resampler = try Resampler(from: clientRate, to: deviceRate, channels: deviceChannels, quality: IOPlaybackConversion.quality)
        resamplerRef = Unmanaged.passUnretained(resampler)
        let sliceOut = Int((Double(sliceFrames) * deviceRate / clientRate).rounded(.up))
        sliceOwner = try OwnedAudioBufferList(channelCount: deviceChannels, frameCapacity: sliceFrames)
        fifoOwner = try OwnedAudioBufferList(channelCount: deviceChannels, frameCapacity: periodFrames + 2 * sliceOut + 256)
        slice = sliceOwner.list
        fifo = fifoOwner.list
        let sources = try ChannelMap.sources(inputs: clientChannels, outputs: deviceChannels)
        channelSources = .allocate(capacity: sources.count)
        channelSources.initialize(from: sources, count: sources.count)
        warmUp(resampler, slices: slice, into: fifo)
        let filterDelay = try measuredDelay(from: clientRate, to: deviceRate, piece: sliceFrames, room: fifo.frameCount)
        latencyFrames = filterDelay + Double(sliceOut) / 2
    }

    deinit { channelSources.deallocate() }

    /// Fills `frames` frames of `output` (device channels), rendering client slices through
    /// `render(slice, sampleTime)` as the FIFO needs them; on a render error the cycle is
    /// silenced and the error returned. I/O thread only.
    func play(
        into output: AudioBufferList, frames: Int, render: (AudioBufferList, Double) -> AudioError.Code
    ) -> AudioError.Code {
        var status = AudioError.Code.noError
        // Bounded: each slice yields about a period's worth, so a few rounds always suffice.
        var rounds = 0
        while fifoFrames < frames && rounds < 64 {
            rounds += 1
            if pendingFrames == 0 {
                status = render(slice, clientSampleTime)
                clientSampleTime += Double(sliceFrames)
                if status != .noError { break }
                pendingOffset = 0
                pendingFrames = sliceFrames
            }
            let room = fifo.frameCount - fifoFrames
            if room == 0 { break }
            let (consumed, produced) = resamplerRef._withUnsafeGuaranteedRef {
                $0.process(slice.frames(from: pendingOffset, count: pendingFrames), into: fifo.frames(from: fifoFrames, count: room))
            }
            pendingOffset += consumed
            pendingFrames -= consumed
            fifoFrames += produced
        }
        let ready = min(frames, fifoFrames)
        if status == .noError && ready > 0 {
            for channel in 0..<min(output.channelCount, fifo.channelCount) {
                output.samples(channel).update(from: fifo.samples(channel), count: ready)
            }
        }
        let silentFrom = status == .noError ? ready : 0
        if silentFrom < frames {
            for channel in 0..<output.channelCount { (output.samples(channel) + silentFrom).update(repeating: 0, count: frames - silentFrom) }
        }
        dropFront(ready, of: fifo, holding: &fifoFrames)
        return status
    }
}

/// The I/O unit's capture conversion: each cycle's device input, mapped to the client's
/// channels and resampled to the client rate, lands in a client-rate FIFO that bus 1 (and
/// the capture source, and the input callback) read from its head. Reads do not consume;
/// the I/O unit consumes what a cycle's render took (or what the input callback was given
/// when nothing plays), and the FIFO drops its oldest frames rather than overflow.
final class IOCaptureConversion: @unchecked Sendable {
    let latencyFrames: Double
    private let resampler: Resampler
    private let resamplerRef: Unmanaged<Resampler>
    private let mappedOwner: OwnedAudioBufferList
    private let fifoOwner: OwnedAudioBufferList
    private let mapped: AudioBufferList
    private let fifo: AudioBufferList
    private let map: UnsafeMutablePointer<Int>
    /// Room kept free for one cycle's output (and the most one cycle converts).
    private let cycleRoom: Int
    var maximumCycleFrames: Int { cycleRoom }
    private var fifoFrames = 0
    /// Frames the last `append` added (the newest at the FIFO's tail).
    private var appendedFrames = 0

    init(deviceRate: Double, clientRate: Double, deviceChannels: Int, clientChannels: Int, periodFrames: Int) throws(AudioError) {
        resampler = try Resampler(from: deviceRate, to: clientRate, channels: clientChannels, quality: IOPlaybackConversion.quality)
        resamplerRef = Unmanaged.passUnretained(resampler)
        cycleRoom = Int((Double(periodFrames) * clientRate / deviceRate).rounded(.up)) + 64
        mappedOwner = try OwnedAudioBufferList(channelCount: clientChannels, frameCapacity: periodFrames)
        fifoOwner = try OwnedAudioBufferList(channelCount: clientChannels, frameCapacity: 4 * cycleRoom)
        mapped = mappedOwner.list
        fifo = fifoOwner.list
        let sources = try ChannelMap.sources(inputs: deviceChannels, outputs: clientChannels)
        map = .allocate(capacity: sources.count)
        map.initialize(from: sources, count: sources.count)
        warmUp(resampler, slices: mapped, into: fifo)
        let filterDelay = try measuredDelay(from: deviceRate, to: clientRate, piece: periodFrames, room: fifo.frameCount)
        latencyFrames = filterDelay / clientRate * deviceRate
    }

    deinit { map.deallocate() }

    /// The converted capture not yet consumed (a view of the FIFO's head). I/O thread only.
    var available: AudioBufferList { fifo.frames(from: 0, count: fifoFrames) }

    /// What the last `append` added (what the input callback is told about). I/O thread only.
    var recent: AudioBufferList {
        let count = min(appendedFrames, fifoFrames)
        return fifo.frames(from: fifoFrames - count, count: count)
    }

    /// Converts one cycle of device input (`frames` frames) onto the FIFO. I/O thread only.
    func append(_ input: AudioBufferList, frames: Int) {
        if fifo.frameCount - fifoFrames < cycleRoom { dropFront(fifoFrames - (fifo.frameCount - cycleRoom), of: fifo, holding: &fifoFrames) }
        let before = fifoFrames
        defer { appendedFrames = fifoFrames - before }
        let count = min(frames, mapped.frameCount)
        ChannelMap.apply(map, from: input, to: mapped, frames: count)
        var offset = 0
        var rounds = 0
        while offset < count && rounds < 8 {
            rounds += 1
            let room = fifo.frameCount - fifoFrames
            if room == 0 { break }
            let (consumed, produced) = resamplerRef._withUnsafeGuaranteedRef {
                $0.process(mapped.frames(from: offset, count: count - offset), into: fifo.frames(from: fifoFrames, count: room))
            }
            offset += consumed
            fifoFrames += produced
        }
    }

    /// Forgets the first `frames` frames (they were rendered). I/O thread only.
    func consume(_ frames: Int) { dropFront(min(frames, fifoFrames), of: fifo, holding: &fifoFrames) }

    /// Forgets everything held (all of it was handed out). I/O thread only.
    func consumeAll() { fifoFrames = 0 }
}

/// Removes `count` frames from the front of a FIFO holding `held` frames.
private func dropFront(_ count: Int, of fifo: AudioBufferList, holding held: inout Int) {
    guard count > 0 else { return }
    let remaining = held - count
    if remaining > 0 {
        for channel in 0..<fifo.channelCount {
            let samples = fifo.samples(channel)
            samples.update(from: samples + count, count: remaining)
        }
    }
    held = max(0, remaining)
}

/// Runs silence through a new resampler, in pieces larger than it will ever be given
/// (libsoxr allocates its internal buffers on first use and grows them to the largest
/// backlog it has held), so the I/O thread never makes it allocate. The silence stays in
/// the filter: the stream then starts with no start-up gap, as if it had begun earlier.
private func warmUp(_ resampler: Resampler, slices: AudioBufferList, into room: AudioBufferList) {
    let large = 8 * max(slices.frameCount, room.frameCount)
    guard let input = try? OwnedAudioBufferList(channelCount: slices.channelCount, frameCapacity: large),
        let output = try? OwnedAudioBufferList(channelCount: room.channelCount, frameCapacity: 4 * large)
    else { return }
    for pieces in [1, 8, 1, 64] {
        let piece = max(1, large / pieces)
        var offset = 0
        while offset < large {
            let (consumed, _) = resampler.process(input.list.frames(from: offset, count: min(piece, large - offset)), into: output.list)
            if consumed == 0 { break }
            offset += consumed
        }
        // And with little room out, so the input backs up inside the filter.
        _ = resampler.process(input.list, into: output.list(frameCount: 1))
        while resampler.process(input.list(frameCount: 0), into: output.list).produced > 0 {}
    }
    room.clear()
}

/// The delay (output frames) a resampler primed as the I/O unit primes it adds to a stream
/// fed in pieces of `piece` frames: an impulse's peak, found on a scratch resampler of the
/// same recipe (libsoxr's own delay figure includes its input backlog and is not this).
private func measuredDelay(from inputRate: Double, to outputRate: Double, piece: Int, room: Int) throws(AudioError) -> Double {
    let probe = try Resampler(from: inputRate, to: outputRate, channels: 1, quality: IOPlaybackConversion.quality)
    let inputFrames = max(piece, Int(inputRate / 10))
    let input = try OwnedAudioBufferList(channelCount: 1, frameCapacity: inputFrames)
    let outputCapacity = Int(Double(inputFrames) * outputRate / inputRate) + 4 * piece + 1024
    let output = try OwnedAudioBufferList(channelCount: 1, frameCapacity: outputCapacity)
    let scratch = try OwnedAudioBufferList(channelCount: 1, frameCapacity: room)
    warmUp(probe, slices: input.list(frameCount: piece), into: scratch.list)
    input.list.clear()
    input.list.samples(0)[0] = 1
    var offset = 0
    var produced = 0
    while offset < inputFrames && produced < outputCapacity {
        let count = min(piece, inputFrames - offset)
        let result = probe.process(input.list.frames(from: offset, count: count), into: output.list.frames(from: produced, count: outputCapacity - produced))
        if result.consumed == 0 && result.produced == 0 { break }
        offset += result.consumed
        produced += result.produced
    }
    let samples = output.list.samples(0)
    var peak = 0
    for n in 0..<produced where abs(samples[n]) > abs(samples[peak]) { peak = n }
    return Double(peak)
}
