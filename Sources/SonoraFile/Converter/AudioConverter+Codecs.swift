import SonoraCore
import SonoraDSP

/// The libavcodec side of an `AudioConverter`: its decoder or encoder and what a caller set
/// before the first conversion (cookie, bit rate, quality, complexity, priming to drop).
final class ConverterCodecState {
    var decoder: CodecDecoder?
    var encoder: CodecEncoder?
    /// Whether the encoder has taken input (its settings are then fixed until `reset()`).
    var encoderUsed = false
    var encoderFinished = false
    var decompressionCookie: [UInt8]?
    var bitRate: Int?
    var quality: Int?
    var complexity: Int?
    /// Decoded frames to drop at the start and the end (set by the caller, as Core Audio's PrimeInfo).
    var decodePrimeInfo = AudioConverterPrimeInfo()
    /// Start frames still to drop.
    var leadingLeft = 0
    /// Decoded frames (interleaved) held back while they may be the stream's last `trailingFrames`.
    var held: [Float] = []
    /// The rate the resampler was made for (decoding: the decoder's output rate).
    var resampledRate: Double?
    /// Packets `fillPackets` made beyond the count asked, handed out first by the next call.
    var heldPackets = AudioConverterPackets()
}

extension AudioConverter {
    /// Whether the source is compressed (packets in, PCM out).
    var isDecoding: Bool { FFmpegCodecs.decodes(source.formatID) && source.pcmSample == nil }
    /// Whether the destination is compressed (PCM in, packets out).
    var isEncoding: Bool { FFmpegCodecs.encodes(destination.formatID) && destination.pcmSample == nil }

    func requirePCMSides(_ call: String) throws(AudioError) {
        if isDecoding || isEncoding {
            throw AudioError(.requiresPacketDescriptions, "AudioConverter.\(call): \(isDecoding ? source : destination) has variable-size packets: use the packet forms (convert(packets:), fill(frameCount:packets:), convertToPackets(_:), fillPackets(packetCount:input:))")
        }
    }

    // MARK: Properties

    /// kAudioConverterDecompressionMagicCookie: the stream's cookie (esds, ALACSpecificConfig,
    /// STREAMINFO, OpusHead), set before the first packet; a bad one fails that conversion.
    public var decompressionMagicCookie: [UInt8]? {
        get { codecState.decompressionCookie }
        set {
            codecState.decompressionCookie = newValue
            codecState.decoder = nil
        }
    }

    /// kAudioConverterCompressionMagicCookie: the encoder's cookie for the file it writes (nil for MP3).
    /// FLAC's STREAMINFO (sample count, MD5) is complete after the stream is flushed.
    public var compressionMagicCookie: [UInt8]? {
        get throws(AudioError) {
            guard isEncoding else {
                throw AudioError(.converterPropertyNotSupported, "AudioConverter: \(destination) has no compression magic cookie (the destination is not encoded)")
            }
            return try activeEncoder().magicCookie
        }
    }

    /// kAudioConverterPrimeInfo. Encoding: the encoder's delay (leading) and, after the flush,
    /// the padding of the last packet (trailing), to store in the file's packet table.
    /// Decoding: decoded frames (at the decoder's rate) this converter drops at the start and
    /// at the end of the stream — set it from the packet table so the output lines up with the source.
    public var primeInfo: AudioConverterPrimeInfo {
        get {
            if isEncoding {
                guard let encoder = try? activeEncoder() else { return AudioConverterPrimeInfo() }
                return AudioConverterPrimeInfo(leadingFrames: encoder.primingFrames, trailingFrames: encoder.remainderFrames)
            }
            return codecState.decodePrimeInfo
        }
        set {
            guard isDecoding else { return }
            codecState.decodePrimeInfo = AudioConverterPrimeInfo(leadingFrames: max(0, newValue.leadingFrames), trailingFrames: max(0, newValue.trailingFrames))
            if codecState.decoder == nil { codecState.leadingLeft = codecState.decodePrimeInfo.leadingFrames }
        }
    }

    /// kAudioConverterEncodeBitRate: bits per second the encoder makes (nil for ALAC and FLAC, and
    /// when not encoding).
    public var bitRate: Int? {
        guard isEncoding, destination.formatID != .appleLossless, destination.formatID != .flac else { return nil }
        return codecState.bitRate ?? (try? activeEncoder())?.bitRate
    }

    /// kAudioConverterApplicableEncodeBitRates: the bit rates `setBitRate` takes.
    public var applicableBitRates: [ClosedRange<Int>] {
        guard isEncoding else { return [] }
        let channels = Int(destination.channelsPerFrame)
        let rate = Int(destination.sampleRate)
        switch destination.formatID {
        // libavcodec's AAC encoder caps a frame at 6144 bits per channel.
        case .mpeg4AAC: return [(8000 * channels)...(min(320_000, 6144 * rate / 1024) * channels)]
        case .mpegLayer3:
            let kbps = rate >= 32000 ? [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
                : [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
            return kbps.map { ($0 * 1000)...($0 * 1000) }
        case .opus: return [6000...(256_000 * channels)]
        default: return []
        }
    }

    /// Sets the encoder's bit rate; only before the first conversion (or after `reset()`).
    public func setBitRate(_ bitRate: Int) throws(AudioError) {
        try requireSettableEncoder("bit rate")
        let ranges = applicableBitRates
        guard !ranges.isEmpty else {
            throw AudioError(.converterPropertyNotSupported, "AudioConverter: \(destination.formatID) has no bit rate to set")
        }
        guard ranges.contains(where: { $0.contains(bitRate) }) else {
            throw AudioError(.parameterError, "AudioConverter: \(bitRate) bits per second is not one \(destination.formatID) takes (\(ranges.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)…\($0.upperBound)" }.joined(separator: ", ")))")
        }
        codecState.bitRate = bitRate
        codecState.encoder = nil
    }

    /// kAudioConverterCodecQuality (0…127, 127 best): LAME's algorithm quality, FLAC's compression level.
    public var quality: Int? { codecState.quality }

    public func setQuality(_ quality: Int) throws(AudioError) {
        try requireSettableEncoder("quality")
        guard destination.formatID == .mpegLayer3 || destination.formatID == .flac else {
            throw AudioError(.converterPropertyNotSupported, "AudioConverter: the \(destination.formatID) encoder has no quality setting (MP3 and FLAC have)")
        }
        guard (0...127).contains(quality) else { throw AudioError(.parameterError, "AudioConverter: quality \(quality) is outside 0…127") }
        codecState.quality = quality
        codecState.encoder = nil
    }

    /// The Opus encoder's complexity (0…10, 10 slowest and best).
    public var complexity: Int? { codecState.complexity }

    public func setComplexity(_ complexity: Int) throws(AudioError) {
        try requireSettableEncoder("complexity")
        guard destination.formatID == .opus else {
            throw AudioError(.converterPropertyNotSupported, "AudioConverter: the \(destination.formatID) encoder has no complexity setting (Opus has)")
        }
        guard (0...10).contains(complexity) else { throw AudioError(.parameterError, "AudioConverter: Opus complexity \(complexity) is outside 0…10") }
        codecState.complexity = complexity
        codecState.encoder = nil
    }

    private func requireSettableEncoder(_ what: String) throws(AudioError) {
        guard isEncoding else {
            throw AudioError(.converterPropertyNotSupported, "AudioConverter: \(what) applies to an encoder; the destination \(destination) is not encoded")
        }
        guard !codecState.encoderUsed else {
            throw AudioError(.illegalOperation, "AudioConverter: the \(what) is fixed once encoding has started (reset() first)")
        }
    }

    func activeEncoder() throws(AudioError) -> CodecEncoder {
        if let encoder = codecState.encoder { return encoder }
        let encoder = try CodecEncoder(format: destination, bitRate: codecState.bitRate, quality: codecState.quality, complexity: codecState.complexity)
        codecState.encoder = encoder
        return encoder
    }

    func activeDecoder() throws(AudioError) -> CodecDecoder {
        if let decoder = codecState.decoder { return decoder }
        let decoder = try CodecDecoder(format: source, magicCookie: codecState.decompressionCookie)
        codecState.decoder = decoder
        codecState.leadingLeft = codecState.decodePrimeInfo.leadingFrames
        codecState.held = []
        return decoder
    }

    func resetCodec() {
        codecState.decoder?.reset()
        codecState.leadingLeft = codecState.decodePrimeInfo.leadingFrames
        codecState.held = []
        if codecState.encoderUsed { codecState.encoder = nil }
        codecState.encoderUsed = false
        codecState.encoderFinished = false
        codecState.heldPackets = AudioConverterPackets()
    }

    // MARK: Decoding (packets in)

    /// Decodes `packets` (each located by its description) and returns destination PCM bytes
    /// (fewer frames than decoded while priming is dropped or the resampler fills).
    public func convert(packets: AudioConverterPackets) throws(AudioError) -> [UInt8] {
        guard isDecoding else {
            throw AudioError(.unsupportedDataFormat, "AudioConverter.convert(packets:): the source \(source) is not a compressed format")
        }
        try packets.validate()
        let decoder = try activeDecoder()
        var interleaved: [Float] = []
        var failure: AudioError?
        packets.data.withUnsafeBytes { raw in
            for description in packets.descriptions {
                let start = Int(description.startOffset)
                do throws(AudioError) {
                    try decoder.decode(UnsafeRawBufferPointer(rebasing: raw[start..<start + Int(description.dataByteSize)]), into: &interleaved)
                } catch {
                    failure = error
                    return
                }
            }
        }
        if let failure { throw failure }
        return try emitDecoded(interleaved, final: false)
    }

    /// The pull form of decoding (AudioConverterFillComplexBuffer): at most `frameCount` destination
    /// frames, asking `input` for about the packets still needed (its argument, at least 1).
    /// `input` returns packets with descriptions; none (an empty value) ends the stream, after
    /// which it is not called again until `reset()`; an error it throws stops the fill with that error.
    public func fill(frameCount: Int, packets input: (_ packetCount: Int) throws -> AudioConverterPackets) throws -> [UInt8] {
        guard isDecoding else {
            throw AudioError(.unsupportedDataFormat, "AudioConverter.fill(frameCount:packets:): the source \(source) is not a compressed format")
        }
        guard frameCount >= 0 else { throw AudioError(.invalidOutputSize, "AudioConverter: fill(frameCount: \(frameCount))") }
        var output = heldBack
        heldBack = []
        while frames(in: output) < frameCount && !inputEnded {
            let missing = Double(frameCount - frames(in: output)) * source.sampleRate / destination.sampleRate
            let perPacket = Double(max(source.framesPerPacket, 1024))
            let supplied = try input(max(1, Int((missing / perPacket).rounded(.up))))
            if supplied.isEmpty {
                output = joined(output, try flushDecoded())
                inputEnded = true
            } else {
                output = joined(output, try convert(packets: supplied))
            }
        }
        let (head, tail) = split(output, atFrame: min(frameCount, frames(in: output)))
        heldBack = tail
        return head
    }

    /// The end of a decoded stream: what the decoder and resampler still hold, less the trailing frames.
    func flushDecoded() throws(AudioError) -> [UInt8] {
        var interleaved: [Float] = []
        if let decoder = codecState.decoder { try decoder.drain(into: &interleaved) }
        return try emitDecoded(interleaved, final: true)
    }

    /// Drops priming, holds back what may be trailing padding, then maps, resamples and writes PCM.
    private func emitDecoded(_ interleaved: [Float], final: Bool) throws(AudioError) -> [UInt8] {
        let channels = Int(source.channelsPerFrame)
        var released: [Float] = []
        if let decoder = codecState.decoder {
            let decoded = decoder.outputFormat
            guard Int(decoded.channelsPerFrame) == channels else {
                throw AudioError(.unsupportedDataFormat, "AudioConverter: the \(source.formatID) stream decodes to \(decoded.channelsPerFrame) channels, its format says \(channels)")
            }
            if codecState.resampledRate != decoded.sampleRate {
                // HE-AAC learns its rate from the first packet: resample from what the decoder makes.
                codecState.resampledRate = decoded.sampleRate
                resampler = decoded.sampleRate == destination.sampleRate ? nil
                    : try Resampler(from: decoded.sampleRate, to: destination.sampleRate, channels: channelMap.count, quality: resamplerQuality)
            }
            codecState.held += interleaved
            let dropped = min(codecState.leadingLeft, codecState.held.count / channels)
            codecState.held.removeFirst(dropped * channels)
            codecState.leadingLeft -= dropped
            let frames = codecState.held.count / channels
            let releasable = max(0, frames - codecState.decodePrimeInfo.trailingFrames)
            released = Array(codecState.held[0..<releasable * channels])
            codecState.held = final ? [] : Array(codecState.held[(releasable * channels)...])
        }
        let frames = released.count / max(channels, 1)
        var planar: [[Float]] = Array(repeating: [Float](repeating: 0, count: frames), count: channels)
        for channel in 0..<channels {
            for frame in 0..<frames { planar[channel][frame] = released[frame * channels + channel] }
        }
        var output = map(planar)
        if let resampler {
            output = resample(output, with: resampler, flushing: false)
            if final {
                let tail = resample(Array(repeating: [], count: output.count), with: resampler, flushing: true)
                for channel in 0..<output.count { output[channel] += tail[channel] }
            }
        }
        return try encode(output, final: final)
    }

    // MARK: Encoding (packets out)

    /// Encodes source bytes; returns the packets completed so far with their descriptions.
    public func convertToPackets(_ bytes: [UInt8]) throws(AudioError) -> AudioConverterPackets {
        guard isEncoding else {
            throw AudioError(.unsupportedDataFormat, "AudioConverter.convertToPackets(_:): the destination \(destination) is not a compressed format")
        }
        guard !codecState.encoderFinished else {
            throw AudioError(.illegalOperation, "AudioConverter: the encoded stream was flushed (reset() to start another)")
        }
        let encoder = try activeEncoder()
        codecState.encoderUsed = true
        var output = map(try decode(bytes))
        if let resampler { output = resample(output, with: resampler, flushing: false) }
        return try encodePackets(output, with: encoder)
    }

    /// The end of an encoded stream: the resampler's tail, the last short packet and the encoder's
    /// delay drained. `primeInfo.trailingFrames` is valid afterwards.
    public func flushPackets() throws(AudioError) -> AudioConverterPackets {
        guard isEncoding else {
            throw AudioError(.unsupportedDataFormat, "AudioConverter.flushPackets(): the destination \(destination) is not a compressed format")
        }
        guard !codecState.encoderFinished else { return AudioConverterPackets() }
        let encoder = try activeEncoder()
        codecState.encoderUsed = true
        var packets = AudioConverterPackets()
        if let resampler {
            let tail = resample(Array(repeating: [], count: channelMap.count), with: resampler, flushing: true)
            packets = try encodePackets(tail, with: encoder)
        }
        codecState.encoderFinished = true
        append(try encoder.finish(), to: &packets)
        return packets
    }

    /// The pull form of encoding: at most `packetCount` packets (fewer only at the end), asking
    /// `input` for source bytes whenever more are needed; `input` returns none at the end.
    public func fillPackets(packetCount: Int, input: () throws -> [UInt8]) throws -> AudioConverterPackets {
        guard packetCount >= 0 else { throw AudioError(.invalidOutputSize, "AudioConverter: fillPackets(packetCount: \(packetCount))") }
        var output = codecState.heldPackets
        codecState.heldPackets = AudioConverterPackets()
        while output.count < packetCount && !inputEnded {
            let bytes = try input()
            if bytes.isEmpty {
                output.append(contentsOf: try flushPackets())
                inputEnded = true
            } else {
                output.append(contentsOf: try convertToPackets(bytes))
            }
        }
        let (head, tail) = output.split(at: min(packetCount, output.count))
        codecState.heldPackets = tail
        return head
    }

    private func encodePackets(_ planar: [[Float]], with encoder: CodecEncoder) throws(AudioError) -> AudioConverterPackets {
        let channels = planar.count
        let frames = planar.first?.count ?? 0
        var interleaved = [Float](repeating: 0, count: frames * channels)
        for channel in 0..<channels {
            for frame in 0..<frames { interleaved[frame * channels + channel] = planar[channel][frame] }
        }
        var made: [CodecEncoder.EncodedPacket] = []
        var failure: AudioError?
        interleaved.withUnsafeBufferPointer { buffer in
            do throws(AudioError) { made = try encoder.encode(buffer, frameCount: frames) } catch { failure = error }
        }
        if let failure { throw failure }
        var packets = AudioConverterPackets()
        append(made, to: &packets)
        return packets
    }

    private func append(_ made: [CodecEncoder.EncodedPacket], to packets: inout AudioConverterPackets) {
        // Formats with a fixed packet size (AAC, MP3) describe none; FLAC's and Opus's vary (ALAC's last is short).
        let fixed = destination.framesPerPacket
        for packet in made {
            packets.append(packet.bytes, variableFrames: fixed == 0 || packet.frames != Int(fixed) ? packet.frames : 0)
        }
    }
}
