import SonoraCore
import SonoraDSP

/// Core Audio's ExtAudioFile: an `AudioFile` read and written in a *client*
/// format of the caller's choosing — any linear PCM sample type, interleaved or
/// not, either byte order, at another sample rate (libsoxr), mono ⇄ multichannel —
/// with the conversion done inside. Positions (`seek`, `frameLength`, `position`)
/// count file frames, as in Core Audio.
public final class ExtAudioFile {
    public let file: AudioFile
    public private(set) var clientFormat: StreamFormat

    private let block = 4096
    private var fileBuffers: OwnedAudioBufferList
    private var clientBuffers: OwnedAudioBufferList?
    private var resampler: Resampler?
    /// File frames read but not yet through the resampler.
    private var pending = 0..<0
    private var endOfFile = false
    private var filePosition = 0

    private init(file: AudioFile) throws(AudioError) {
        self.file = file
        clientFormat = .canonical(sampleRate: file.dataFormat.sampleRate, channels: Int(file.dataFormat.channelsPerFrame))
        fileBuffers = try OwnedAudioBufferList(channelCount: Int(file.dataFormat.channelsPerFrame), frameCapacity: block)
    }

    public static func open(_ path: String) throws(AudioError) -> ExtAudioFile {
        try ExtAudioFile(file: try AudioFile.open(path))
    }

    public static func create(_ path: String, type: AudioFileType, format: StreamFormat, erase: Bool = false) throws(AudioError) -> ExtAudioFile {
        try ExtAudioFile(file: try AudioFile.create(path, type: type, format: format, erase: erase))
    }

    /// Frames in the file (file rate).
    public var frameLength: Int { file.frameCount }

    /// The next file frame to be read.
    public var position: Int { filePosition - pending.count }

    /// Chooses the format reads produce and writes take. Channel counts must
    /// match, or one side must be mono.
    public func setClientFormat(_ format: StreamFormat) throws(AudioError) {
        try format.validate()
        guard format.pcmSample != nil else {
            throw AudioError(.unsupportedDataFormat, "\(file.path): the client format must be linear PCM, not \(format)")
        }
        let fileChannels = file.dataFormat.channelsPerFrame
        guard format.channelsPerFrame == fileChannels || format.channelsPerFrame == 1 || fileChannels == 1 else {
            throw AudioError(.unsupportedDataFormat, "\(file.path): cannot map \(fileChannels) file channels to \(format.channelsPerFrame)")
        }
        clientSources = try ChannelMap.sources(inputs: Int(fileChannels), outputs: Int(format.channelsPerFrame))
        clientFormat = format
        resampler = format.sampleRate == file.dataFormat.sampleRate
            ? nil
            : try Resampler(from: file.dataFormat.sampleRate, to: format.sampleRate, channels: Int(fileChannels))
        clientBuffers = try OwnedAudioBufferList(channelCount: Int(format.channelsPerFrame), frameCapacity: block * 2)
        try seek(toFrame: position)
    }

    /// Moves to file frame `frame`.
    public func seek(toFrame frame: Int) throws(AudioError) {
        try file.seek(toFrame: frame)
        filePosition = frame
        pending = 0..<0
        endOfFile = false
        resampler?.reset()
    }

    /// Reads up to `frameCount` frames in the client format into `destination`;
    /// returns the number read (0 at the end of the file).
    public func read(into destination: PCMBufferList, frameCount: Int) throws(AudioError) -> Int {
        guard destination.format == clientFormat, let sample = clientFormat.pcmSample else {
            throw AudioError(.unsupportedDataFormat, "\(file.path): buffers are \(destination.format), the client format is \(clientFormat)")
        }
        let scratch = try canonicalScratch()
        var done = 0
        while done < min(frameCount, destination.frameCount) {
            let want = min(frameCount - done, scratch.frameCapacity / 2)
            let got = try readCanonical(into: scratch.list(frameCount: want))
            if got == 0 { break }
            let mapped = mapChannels(scratch.list(frameCount: got))
            destination.encode(mapped, frames: got, offset: done, sample: sample)
            done += got
        }
        return done
    }

    /// Appends `frameCount` frames given in the client format.
    public func write(from source: PCMBufferList, frameCount: Int) throws(AudioError) {
        guard source.format == clientFormat, let sample = clientFormat.pcmSample else {
            throw AudioError(.unsupportedDataFormat, "\(file.path): buffers are \(source.format), the client format is \(clientFormat)")
        }
        let channels = Int(clientFormat.channelsPerFrame)
        let decoded = try OwnedAudioBufferList(channelCount: channels, frameCapacity: max(frameCount, 1))
        source.decode(frames: frameCount, offset: 0, into: decoded.list(frameCount: frameCount), sample: sample)
        let fileChannels = Int(file.dataFormat.channelsPerFrame)
        let toFile = try OwnedAudioBufferList(channelCount: fileChannels, frameCapacity: max(frameCount, 1))
        for channel in 0..<fileChannels {
            copySamples(
                from: decoded.list.samples(min(channel, channels - 1)), to: toFile.list.samples(channel), count: frameCount)
        }
        if let resampler = writeResampler(fileChannels) {
            let out = try OwnedAudioBufferList(channelCount: fileChannels, frameCapacity: Int(Double(frameCount) * resampler.outputRate / resampler.inputRate) + 64)
            var offset = 0
            while offset < frameCount {
                let (consumed, produced) = resampler.process(toFile.list(frameCount: frameCount).frames(from: offset, count: frameCount - offset), into: out.list)
                if produced > 0 { try file.writeFrames(from: out.list(frameCount: produced)) }
                offset += consumed
                if consumed == 0 && produced == 0 { break }
            }
        } else {
            try file.writeFrames(from: toFile.list(frameCount: frameCount))
        }
    }

    /// Flushes a write resampler's tail and finishes the file.
    public func close() throws(AudioError) {
        if let resampler = writingResampler {
            let fileChannels = Int(file.dataFormat.channelsPerFrame)
            let out = try OwnedAudioBufferList(channelCount: fileChannels, frameCapacity: 4096)
            while true {
                let produced = resampler.flush(into: out.list)
                if produced == 0 { break }
                try file.writeFrames(from: out.list(frameCount: produced))
            }
            writingResampler = nil
        }
        try file.close()
    }

    // MARK: Inside

    private var writingResampler: Resampler?
    /// File channel feeding each client channel (see `ChannelMap`).
    private var clientSources: [Int] = []
    private var scratchBuffers: OwnedAudioBufferList?

    private func writeResampler(_ channels: Int) -> Resampler? {
        guard clientFormat.sampleRate != file.dataFormat.sampleRate else { return nil }
        if writingResampler == nil {
            writingResampler = try? Resampler(from: clientFormat.sampleRate, to: file.dataFormat.sampleRate, channels: channels)
        }
        return writingResampler
    }

    private func canonicalScratch() throws(AudioError) -> OwnedAudioBufferList {
        if let scratchBuffers { return scratchBuffers }
        let buffers = try OwnedAudioBufferList(channelCount: Int(file.dataFormat.channelsPerFrame), frameCapacity: block * 2)
        scratchBuffers = buffers
        return buffers
    }

    /// Reads canonical frames at the client rate, file channels.
    private func readCanonical(into destination: AudioBufferList) throws(AudioError) -> Int {
        guard let resampler else {
            let got = try file.readFrames(into: destination)
            filePosition += got
            return got
        }
        var produced = 0
        while produced < destination.frameCount {
            if pending.isEmpty && !endOfFile {
                let got = try file.readFrames(into: fileBuffers.list)
                filePosition += got
                pending = 0..<got
                if got == 0 { endOfFile = true }
            }
            let output = destination.frames(from: produced, count: destination.frameCount - produced)
            if pending.isEmpty {
                let made = resampler.flush(into: output)
                produced += made
                if made == 0 { break }
                continue
            }
            let (consumed, made) = resampler.process(fileBuffers.list.frames(from: pending.lowerBound, count: pending.count), into: output)
            pending = (pending.lowerBound + consumed)..<pending.upperBound
            produced += made
            if consumed == 0 && made == 0 { break }
        }
        return produced
    }

    /// File channels to client channels, through the shared `ChannelMap` rules.
    private func mapChannels(_ list: AudioBufferList) -> AudioBufferList {
        guard clientSources != Array(0..<list.channelCount), let client = clientBuffers else { return list }
        let mapped = client.list(frameCount: list.frameCount)
        clientSources.withUnsafeBufferPointer { ChannelMap.apply($0.baseAddress!, from: list, to: mapped, frames: list.frameCount) }
        return mapped
    }
}
