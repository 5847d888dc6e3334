import SonoraCore
import SonoraDSP

/// Core Audio's AudioConverter: between any two linear PCM formats (8/16/24/32-bit
/// integer, 32/64-bit float, either byte order, interleaved or not), channel
/// count changes with a channel map, sample-rate changes (libsoxr), IMA4 ⇄ PCM, and
/// compressed ⇄ PCM through libavcodec: AAC (LC; HE-AAC decode), MP3 (encode through LAME),
/// ALAC, FLAC, Opus — see AudioConverter+Codecs.swift for the packet forms.
///
/// Bytes in and out: interleaved data as usual; non-interleaved data as its
/// channel buffers one after another, each `frames × sample size` bytes; IMA4 as
/// whole packets. The converter keeps state between calls (resampler history, a
/// partial IMA4 packet); `flush()` hands out the rest at the end of a stream.
public final class AudioConverter {
    public let source: StreamFormat
    public let destination: StreamFormat
    /// Destination channel `i` takes source channel `channelMap[i]` (see `ChannelMap`).
    public let channelMap: [Int]

    /// From the decoded rate (the source's, or what the decoder reports for HE-AAC) to the destination's.
    var resampler: Resampler?
    let resamplerQuality: Resampler.Quality
    /// The libavcodec side: decoder or encoder, cookies, codec properties, priming.
    let codecState = ConverterCodecState()
    private var imaStates: [IMAADPCMChannel]
    /// Destination-rate frames waiting to fill an IMA4 packet.
    private var pendingPacket: [[Float]]
    /// Destination bytes `fill` made beyond the frames asked for, handed out by the next `fill`.
    var heldBack: [UInt8] = []
    /// Whether `fill`'s input has said it has no more.
    var inputEnded = false

    public init(
        from source: StreamFormat, to destination: StreamFormat, channelMap: [Int]? = nil,
        quality: Resampler.Quality = .high
    ) throws(AudioError) {
        for (side, format) in [("source", source), ("destination", destination)] {
            try format.validate()
            let codec = side == "source" ? FFmpegCodecs.decodes(format.formatID) : FFmpegCodecs.encodes(format.formatID)
            guard format.pcmSample != nil || format.formatID == .appleIMA4 || codec else {
                throw AudioError(.unsupportedDataFormat, "AudioConverter: \(side) \(format) is neither linear PCM, IMA4 nor a format Sonora \(side == "source" ? "decodes ('aac ', 'aach', '.mp3', 'alac', 'flac', 'opus')" : "encodes ('aac ', '.mp3', 'alac', 'flac', 'opus')")")
            }
        }
        guard source.pcmSample != nil || destination.pcmSample != nil else {
            throw AudioError(.unsupportedDataFormat, "AudioConverter: from \(source) to \(destination): one side must be linear PCM")
        }
        let inputs = Int(source.channelsPerFrame)
        let outputs = Int(destination.channelsPerFrame)
        do {
            self.channelMap = try ChannelMap.sources(inputs: inputs, outputs: outputs, explicit: channelMap)
        } catch {
            throw AudioError(error.code, "AudioConverter: \(error.message)")
        }
        self.source = source
        self.destination = destination
        resamplerQuality = quality
        resampler = source.sampleRate == destination.sampleRate
            ? nil : try Resampler(from: source.sampleRate, to: destination.sampleRate, channels: outputs, quality: quality)
        imaStates = Array(repeating: IMAADPCMChannel(), count: outputs)
        pendingPacket = Array(repeating: [], count: outputs)
        // As AudioConverterNew: a format the encoder cannot make fails here, not at the first packet.
        if isEncoding { _ = try activeEncoder() }
    }

    /// Converts `bytes` of source data; returns destination bytes (possibly fewer
    /// frames than went in while a resampler or an IMA4 packet fills up).
    public func convert(_ bytes: [UInt8]) throws(AudioError) -> [UInt8] {
        try requirePCMSides("convert(_:)")
        let decoded = try decode(bytes)
        let mapped = map(decoded)
        var output = mapped
        if let resampler { output = resample(mapped, with: resampler, flushing: false) }
        return try encode(output, final: false)
    }

    /// The rest: what the resampler holds, and a last IMA4 packet padded with silence.
    public func flush() throws(AudioError) -> [UInt8] {
        if isDecoding { return try flushDecoded() }
        try requirePCMSides("flush()")
        var tail: [[Float]] = Array(repeating: [], count: Int(destination.channelsPerFrame))
        if let resampler { tail = resample(tail, with: resampler, flushing: true) }
        return try encode(tail, final: true)
    }

    /// The pull form (AudioConverterFillComplexBuffer): produces at most `frameCount`
    /// destination frames (fewer only at the end), asking `input` for source bytes
    /// whenever it needs more; `input` returns an empty array at the end, after which
    /// `input` is not called again until `reset()`. What a conversion makes beyond
    /// `frameCount` is kept and handed out first by the next `fill` (`reset()` drops it).
    /// IMA4 comes in whole packets: `frameCount` is rounded down to a multiple of 64 and
    /// must be at least 64 ('otsz' otherwise).
    public func fill(frameCount: Int, input: () throws -> [UInt8]) throws -> [UInt8] {
        try requirePCMSides("fill(frameCount:input:)")
        let granule = destination.formatID == .appleIMA4 ? 64 : 1
        guard frameCount >= 0, frameCount == 0 || frameCount >= granule else {
            throw AudioError(.invalidOutputSize, "AudioConverter: fill(frameCount: \(frameCount)) asks for less than one \(granule)-frame IMA4 packet")
        }
        let wanted = frameCount / granule * granule
        var output = heldBack
        heldBack = []
        while frames(in: output) < wanted && !inputEnded {
            let bytes = try input()
            if bytes.isEmpty {
                output = joined(output, try flush())
                inputEnded = true
            } else {
                output = joined(output, try convert(bytes))
            }
        }
        let (head, tail) = split(output, atFrame: min(wanted, frames(in: output)))
        heldBack = tail
        return head
    }

    /// Forgets the stream so far, and any output `fill` held back.
    public func reset() {
        heldBack = []
        inputEnded = false
        resampler?.reset()
        imaStates = Array(repeating: IMAADPCMChannel(), count: imaStates.count)
        pendingPacket = Array(repeating: [], count: pendingPacket.count)
        resetCodec()
    }

    // MARK: Destination bytes by frame

    /// Bytes of one destination buffer per frame (IMA4: per packet, see `framesPerUnit`).
    private var unitBytes: Int {
        destination.formatID == .appleIMA4 ? Int(destination.bytesPerPacket) : Int(destination.bytesPerFrame)
    }

    private var framesPerUnit: Int { destination.formatID == .appleIMA4 ? 64 : 1 }

    /// Channel buffers in destination bytes: non-interleaved PCM holds one after another.
    var planes: Int { destination.isLinearPCM ? destination.bufferCount : 1 }

    func frames(in bytes: [UInt8]) -> Int {
        bytes.count / max(unitBytes * planes, 1) * framesPerUnit
    }

    /// The first `frame` frames and the rest; `frame` is a multiple of `framesPerUnit`.
    func split(_ bytes: [UInt8], atFrame frame: Int) -> ([UInt8], [UInt8]) {
        let plane = bytes.count / planes
        let cut = frame / framesPerUnit * unitBytes
        var head: [UInt8] = []
        var tail: [UInt8] = []
        head.reserveCapacity(cut * planes)
        tail.reserveCapacity(bytes.count - cut * planes)
        for index in 0..<planes {
            head += bytes[(index * plane)..<(index * plane + cut)]
            tail += bytes[(index * plane + cut)..<((index + 1) * plane)]
        }
        return (head, tail)
    }

    /// `first` then `second`, buffer by buffer.
    func joined(_ first: [UInt8], _ second: [UInt8]) -> [UInt8] {
        if planes == 1 || first.isEmpty { return first + second }
        if second.isEmpty { return first }
        let a = first.count / planes
        let b = second.count / planes
        var result: [UInt8] = []
        result.reserveCapacity(first.count + second.count)
        for index in 0..<planes {
            result += first[(index * a)..<((index + 1) * a)]
            result += second[(index * b)..<((index + 1) * b)]
        }
        return result
    }

    // MARK: Steps

    func decode(_ bytes: [UInt8]) throws(AudioError) -> [[Float]] {
        let channels = Int(source.channelsPerFrame)
        if source.formatID == .appleIMA4 {
            let packetBytes = Int(source.bytesPerPacket)
            guard bytes.count % packetBytes == 0 else {
                throw AudioError(.invalidInputSize, "AudioConverter: \(bytes.count) bytes are not whole IMA4 packets of \(packetBytes)")
            }
            var result: [[Float]] = Array(repeating: [], count: channels)
            let packet = try OwnedAudioBufferList(channelCount: channels, frameCapacity: 64)
            for start in stride(from: 0, to: bytes.count, by: packetBytes) {
                var failure: AudioError?
                bytes[start..<start + packetBytes].withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Void in
                    do throws(AudioError) { try AppleIMA4.decode(packet: raw, channels: channels, into: packet.list) } catch { failure = error }
                }
                if let failure { throw failure }
                for channel in 0..<channels { result[channel] += packet.list[channel] }
            }
            return result
        }
        let sample = source.pcmSample!
        let frameBytes = Int(source.bytesPerFrame) * (source.isInterleaved ? 1 : channels)
        guard bytes.count % frameBytes == 0 else {
            throw AudioError(.invalidInputSize, "AudioConverter: \(bytes.count) bytes are not whole frames of \(source) (\(frameBytes) bytes each)")
        }
        let frames = bytes.count / frameBytes
        guard frames > 0 else { return Array(repeating: [], count: channels) }
        let canonical = try OwnedAudioBufferList(channelCount: channels, frameCapacity: frames)
        var bytes = bytes
        bytes.withUnsafeMutableBytes { raw in
            let buffers = UnsafeMutablePointer<UnsafeMutableRawPointer>.allocate(capacity: source.bufferCount)
            defer { buffers.deallocate() }
            for buffer in 0..<source.bufferCount {
                buffers[buffer] = raw.baseAddress! + buffer * frames * Int(source.bytesPerFrame)
            }
            PCMBufferList(format: source, buffers: buffers, frameCount: frames)
                .decode(frames: frames, offset: 0, into: canonical.list(frameCount: frames), sample: sample)
        }
        return (0..<channels).map { Array(canonical.list[$0]) }
    }

    func map(_ input: [[Float]]) -> [[Float]] {
        let frames = input.first?.count ?? 0
        return channelMap.map { source in
            if source >= 0 { return input[source] }
            if source == ChannelMap.average {
                return (0..<frames).map { frame in input.reduce(0) { $0 + $1[frame] } / Float(input.count) }
            }
            return [Float](repeating: 0, count: frames)
        }
    }

    func resample(_ input: [[Float]], with resampler: Resampler, flushing: Bool) -> [[Float]] {
        let channels = input.count
        let frames = input.first?.count ?? 0
        var output: [[Float]] = Array(repeating: [], count: channels)
        guard let inBuffers = try? OwnedAudioBufferList(channelCount: channels, frameCapacity: max(frames, 1)),
              let outBuffers = try? OwnedAudioBufferList(channelCount: channels, frameCapacity: 4096)
        else { return output }
        for channel in 0..<channels {
            input[channel].withUnsafeBufferPointer { inBuffers.list.samples(channel).update(from: $0.baseAddress!, count: frames) }
        }
        var offset = 0
        while true {
            let made: Int
            if flushing {
                made = resampler.flush(into: outBuffers.list)
            } else {
                let (consumed, produced) = resampler.process(inBuffers.list(frameCount: max(frames, 1)).frames(from: offset, count: frames - offset), into: outBuffers.list)
                offset += consumed
                made = produced
                if consumed == 0 && produced == 0 { break }
            }
            for channel in 0..<channels { output[channel] += outBuffers.list(frameCount: made)[channel] }
            if made == 0 && (flushing || offset >= frames) { break }
        }
        return output
    }

    func encode(_ input: [[Float]], final: Bool) throws(AudioError) -> [UInt8] {
        let channels = Int(destination.channelsPerFrame)
        if destination.formatID == .appleIMA4 {
            for channel in 0..<channels { pendingPacket[channel] += input[channel] }
            if final, let count = pendingPacket.first?.count, count % 64 != 0 {
                for channel in 0..<channels { pendingPacket[channel] += [Float](repeating: 0, count: 64 - count % 64) }
            }
            let packets = (pendingPacket.first?.count ?? 0) / 64
            var bytes = [UInt8](repeating: 0, count: packets * Int(destination.bytesPerPacket))
            let frames = try OwnedAudioBufferList(channelCount: channels, frameCapacity: 64)
            for packet in 0..<packets {
                for channel in 0..<channels {
                    pendingPacket[channel].withUnsafeBufferPointer {
                        frames.list.samples(channel).update(from: $0.baseAddress! + packet * 64, count: 64)
                    }
                }
                let size = Int(destination.bytesPerPacket)
                var failure: AudioError?
                var states = imaStates
                bytes.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) -> Void in
                    do throws(AudioError) {
                        try AppleIMA4.encode(frames.list, states: &states, into: UnsafeMutableRawBufferPointer(rebasing: raw[packet * size..<(packet + 1) * size]))
                    } catch { failure = error }
                }
                imaStates = states
                if let failure { throw failure }
            }
            for channel in 0..<channels { pendingPacket[channel].removeFirst(packets * 64) }
            return bytes
        }
        let sample = destination.pcmSample!
        let frames = input.first?.count ?? 0
        guard frames > 0 else { return [] }
        let canonical = try OwnedAudioBufferList(channelCount: channels, frameCapacity: frames)
        for channel in 0..<channels {
            input[channel].withUnsafeBufferPointer { canonical.list.samples(channel).update(from: $0.baseAddress!, count: frames) }
        }
        var bytes = [UInt8](repeating: 0, count: frames * Int(destination.bytesPerFrame) * (destination.isInterleaved ? 1 : channels))
        bytes.withUnsafeMutableBytes { raw in
            let buffers = UnsafeMutablePointer<UnsafeMutableRawPointer>.allocate(capacity: destination.bufferCount)
            defer { buffers.deallocate() }
            for buffer in 0..<destination.bufferCount {
                buffers[buffer] = raw.baseAddress! + buffer * frames * Int(destination.bytesPerFrame)
            }
            PCMBufferList(format: destination, buffers: buffers, frameCount: frames)
                .encode(canonical.list(frameCount: frames), frames: frames, offset: 0, sample: sample)
        }
        return bytes
    }
}
