import SonoraCore
import SonoraDSP

/// Core Audio's ExtAudioFile: an `AudioFile` read and written in a *client*
/// format of the caller's choosing — any linear PCM sample type, interleaved or
/// not, either byte order, at another sample rate (libsoxr), mono ⇄ multichannel —
/// with the conversion done inside. Positions (`seek`, `frameLength`, `position`)
/// count file frames, as in Core Audio.
///
/// Compressed files (AAC, MP3, ALAC, FLAC, Opus packets in CAF, M4A, MP3, ADTS, Ogg) are
/// decoded and encoded through the codecs (`CompressedFrameReader`/`Writer`): frames
/// count from the first frame of audio, the encoder's priming and padding dropped as the
/// file's packet table says. Formats libsndfile decodes and encodes itself as frames
/// (FLAC, Ogg Vorbis, ALAC in CAF …) go through libsndfile as before.
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

    private var compressedReader: CompressedFrameReader?
    private var compressedWriter: CompressedFrameWriter?

    private init(file: AudioFile, writer: CompressedFrameWriter? = nil) throws(AudioError) {
        self.file = file
        compressedWriter = writer
        if writer == nil && CompressedFrameReader.decodes(file) { compressedReader = try CompressedFrameReader(file: file) }
        clientFormat = .canonical(sampleRate: file.dataFormat.sampleRate, channels: Int(file.dataFormat.channelsPerFrame))
        fileBuffers = try OwnedAudioBufferList(channelCount: Int(file.dataFormat.channelsPerFrame), frameCapacity: block)
    }

    /// ExtAudioFileOpenURL. `typeHint` as AudioFileOpenURL's.
    public static func open(_ path: String, typeHint: AudioFileType? = nil) throws(AudioError) -> ExtAudioFile {
        try ExtAudioFile(file: try AudioFile.open(path, mode: .read, typeHint: typeHint, asPackets: true))
    }

    /// ExtAudioFileCreateWithURL: a file of `type` holding `format`, written from frames
    /// in the client format. Compressed formats are encoded with `encoder` settings
    /// (bit rate, quality; kAudioConverterEncodeBitRate on the file's converter in Core Audio).
    public static func create(
        _ path: String, type: AudioFileType, format: StreamFormat, encoder: EncoderSettings = EncoderSettings(), erase: Bool = false
    ) throws(AudioError) -> ExtAudioFile {
        let encodedBySonora = !format.isLinearPCM && format.formatID != .appleIMA4
            && (SndfileFormat.word(for: format, in: type) == nil || encoder != EncoderSettings())
        guard encodedBySonora else {
            return try ExtAudioFile(file: try AudioFile.create(path, type: type, format: format, erase: erase))
        }
        let writer = try CompressedFrameWriter.create(path, type: type, format: format, settings: encoder, erase: erase)
        return try ExtAudioFile(file: writer.file, writer: writer)
    }

    /// Frames in the file (file rate): for compressed files, the audio without priming and padding.
    public var frameLength: Int { compressedReader?.frameCount ?? file.frameCount }

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
        // A file being written has nothing to seek in.
        if !file.isBeingCreated { try seek(toFrame: position) }
    }

    /// Moves to file frame `frame`.
    public func seek(toFrame frame: Int) throws(AudioError) {
        if let compressedReader { try compressedReader.seek(toFrame: frame) } else { try file.seek(toFrame: frame) }
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
                if produced > 0 { try writeFileFrames(from: out.list(frameCount: produced)) }
                offset += consumed
                if consumed == 0 && produced == 0 { break }
            }
        } else {
            try writeFileFrames(from: toFile.list(frameCount: frameCount))
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
                try writeFileFrames(from: out.list(frameCount: produced))
            }
            writingResampler = nil
        }
        if let compressedWriter {
            self.compressedWriter = nil
            try compressedWriter.close()
        } else {
            try file.close()
        }
    }

    private func readFileFrames(into destination: AudioBufferList) throws(AudioError) -> Int {
        if let compressedReader { return try compressedReader.readFrames(into: destination) }
        return try file.readFrames(into: destination)
    }

    private func writeFileFrames(from source: AudioBufferList) throws(AudioError) {
        if let compressedWriter { try compressedWriter.writeFrames(from: source) } else { try file.writeFrames(from: source) }
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
            let got = try readFileFrames(into: destination)
            filePosition += got
            return got
        }
        var produced = 0
        while produced < destination.frameCount {
            if pending.isEmpty && !endOfFile {
                let got = try readFileFrames(into: fileBuffers.list)
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
