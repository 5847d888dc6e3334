import Foundation
import SonoraCore

/// Compressed packet files (Core Audio's AudioFile for VBR data): opening and creating
/// them, and the properties packets have — packet table, cookie, bit rate, data offset.
extension AudioFile {
    /// Formats Sonora writes as packets into `type` (with `writePackets` and descriptions).
    static func packetFormats(for type: AudioFileType) -> [AudioFormatID] {
        switch type {
        case .caf: [.mpeg4AAC, .mpeg4AAC_HE, .appleLossless, .mpegLayer3, .flac, .opus]
        case .m4a, .mp4: [.mpeg4AAC, .mpeg4AAC_HE, .appleLossless]
        case .adts: [.mpeg4AAC, .mpeg4AAC_HE]
        case .mp3: [.mpegLayer3]
        case .ogg: [.opus]
        default: []
        }
    }

    /// Opens a file libsndfile does not read: compressed CAF (already parsed into
    /// `cafPackets`), or a container libavformat demuxes.
    static func openPacketFile(_ path: String, mode: Mode, cafPackets: PacketIndex?, typeHint: AudioFileType?, sndfileReason: String) throws(AudioError) -> AudioFile {
        let index: PacketIndex
        let type: AudioFileType
        if let cafPackets {
            (index, type) = (cafPackets, .caf)
        } else {
            do {
                (index, type) = try DemuxedPacketReader.open(path, typeHint: typeHint)
            } catch where error.code == .unsupportedFileType {
                let hint = typeHint.map { " (hinted as \($0))" } ?? ""
                throw AudioError(.unsupportedFileType, "\(path)\(hint): not an audio file Sonora reads (libsndfile: \(sndfileReason); libavformat: \(error.message.replacingOccurrences(of: "\(path): ", with: "")))")
            }
        }
        guard mode == .read else {
            throw AudioError(.operationNotSupported, "\(path): \(index.format.formatID) packet files open for reading only")
        }
        return AudioFile(path: path, type: type, format: index.format, index: index, writer: nil, temporaryPath: nil)
    }

    /// A packet file being created, or nil when libsndfile writes `format` (PCM, and the
    /// compressed formats it encodes from frames when no cookie comes with them).
    static func createPacketFile(
        _ path: String, temporary: String, type: AudioFileType, format: StreamFormat, magicCookie: [UInt8]?, tableReserve: Int = 0
    ) throws(AudioError) -> AudioFile? {
        guard !format.isLinearPCM, format.formatID != .appleIMA4 else { return nil }
        let sndfileEncodes = SndfileFormat.word(for: format, in: type) != nil
        if magicCookie == nil && sndfileEncodes { return nil }
        guard packetFormats(for: type).contains(format.formatID) else {
            if sndfileEncodes {
                throw AudioError(.unsupportedDataFormat, "\(path): a \(type) file takes \(format.formatID) as frames (encoded by libsndfile), not as packets with a magic cookie")
            }
            throw AudioError(.unsupportedDataFormat, "\(path): a \(type) file cannot hold \(format.formatID) (\(format))")
        }
        // libavformat and CAF keep rates and channel counts in 32 bits; Core Audio's codecs go to 384 kHz.
        guard format.sampleRate.rounded() == format.sampleRate, format.sampleRate <= 768_000, format.channelsPerFrame <= 64 else {
            throw AudioError(.unsupportedDataFormat, "\(path): a \(type) file cannot hold \(format.formatID) at \(format.sampleRate) Hz with \(format.channelsPerFrame) channels")
        }
        if let fixed = format.formatID.framesPerPacket, format.formatID != .appleLossless, format.framesPerPacket != fixed,
           !(format.formatID == .mpegLayer3 && format.framesPerPacket == 576) {
            throw AudioError(.unsupportedDataFormat, "\(path): \(format.formatID) packets hold \(fixed) frames, not \(format.framesPerPacket)")
        }
        if let magicCookie, magicCookie.count > CAFPacketReader.maximumCookieSize {
            throw AudioError(.invalidPropertyValue, "\(path): a magic cookie of \(magicCookie.count) bytes (at most \(CAFPacketReader.maximumCookieSize))")
        }
        let writer: PacketWriter = type == .caf
            ? try CAFPacketWriter(path: temporary, format: format, cookie: magicCookie, tableReserve: tableReserve)
            : try MuxedPacketWriter(path: temporary, type: type, format: format, cookie: magicCookie)
        let file = AudioFile(path: path, type: type, format: format, index: nil, writer: writer, temporaryPath: temporary)
        file.createdCookie = magicCookie
        return file
    }

    /// The error frame reads and writes give on a packet file.
    func packetFileHasNoFrames() -> AudioError {
        AudioError(.operationNotSupported, "\(path): \(dataFormat.formatID) in a \(fileType) file is read and written as packets (readPackets/writePackets); decode through ExtAudioFile or AudioConverter")
    }

    /// The packet index, found on first use for compressed files libsndfile decodes; nil for
    /// PCM and IMA4 (their packets are read through libsndfile and IMA4File) and when the
    /// file cannot be demuxed.
    var loadedPacketIndex: PacketIndex? { try? packetIndexForReading() }

    func packetIndexForReading() throws(AudioError) -> PacketIndex? {
        if packetIndexSearched { return packetIndex }
        packetIndexSearched = true
        guard !dataFormat.isLinearPCM, dataFormat.formatID != .appleIMA4, packetWriter == nil, !isBeingCreated else { return nil }
        packetIndex = try DemuxedPacketReader.open(path, typeHint: fileType).index
        return packetIndex
    }

    // MARK: Properties

    /// The most bytes a packet of this format can take (kAudioFilePropertyPacketSizeUpperBound):
    /// the codec's bound where it has one, never below the largest packet in the file.
    public var packetSizeUpperBound: Int? {
        let channels = Int(dataFormat.channelsPerFrame)
        let largest = maximumPacketSize ?? 0
        let bound: Int? = switch dataFormat.formatID {
        case .linearPCM, .appleIMA4: maximumPacketSize
        case .mpeg4AAC, .mpeg4AAC_HE: 768 * channels  // 6144 bits per channel per raw data block
        case .mpegLayer3: 2881  // MPEG-2.5 layer III at 160 kbit/s and 8 kHz, padded
        case .opus: 1275 * 3 + 7  // the longest Opus packet (RFC 6716 3.2.5)
        case .appleLossless:
            // A frame stored uncompressed, plus the headers: the ALAC encoder's own bound.
            Int(max(dataFormat.framesPerPacket, 4096)) * channels * Int(max(dataFormat.bitsPerChannel, 16) + 7) / 8 + 64
        case .flac:
            // STREAMINFO's maximum frame size when the encoder recorded it.
            magicCookie.flatMap { $0.count >= 10 ? Int($0[7]) << 16 | Int($0[8]) << 8 | Int($0[9]) : nil }.flatMap { $0 > 0 ? $0 : nil }
        default: nil
        }
        guard let bound else { return maximumPacketSize }
        return max(bound, largest)
    }

    /// The packet table (kAudioFilePropertyPacketTableInfo): valid frames, priming and
    /// remainder, from CAF's `pakt`, MP4's edit list, the LAME header or Ogg Opus' pre-skip.
    /// Nil for PCM and IMA4 without one. For a packet file being created, what was set.
    public var packetTableInfo: AudioFilePacketTableInfo? {
        if packetWriter != nil { return packetTableInfoToWrite }
        return loadedPacketIndex?.info
    }

    /// Sets the packet table a packet file being created gets when closed (priming and
    /// remainder frames; valid frames = the packets' frames less both). Checked on `close()`
    /// against the frames written.
    /// IMA4 in CAF being created (constant packets, no priming) takes a remainder only, set
    /// after its last packet: the frames it says are padding leave the frame count at once.
    public func setPacketTableInfo(_ info: AudioFilePacketTableInfo) throws(AudioError) {
        if let ima4 = ima4File, fileType == .caf {
            guard info.primingFrames == 0, info.remainderFrames >= 0, info.remainderFrames < 64,
                  info.validFrames + Int64(info.remainderFrames) == Int64(ima4.packetCount * 64) else {
                throw AudioError(.invalidPropertyValue, "\(path): IMA4 takes only a remainder of under 64 frames after its last packet; \(info) does not fit its \(ima4.packetCount) packets")
            }
            ima4.setValidFrames(Int(info.validFrames))
            updateFrameCountFromIMA4()
            return
        }
        guard packetWriter != nil else {
            throw AudioError(.unsupportedProperty, "\(path): the packet table is set only on a compressed file being created")
        }
        guard info.validFrames >= 0, info.primingFrames >= 0, info.remainderFrames >= 0 else {
            throw AudioError(.invalidPropertyValue, "\(path): negative frames in the packet table \(info)")
        }
        packetTableInfoToWrite = info
    }

    /// The file offset of the first byte of audio data (kAudioFilePropertyDataOffset); nil
    /// where libsndfile keeps it to itself.
    public var dataOffset: Int? { loadedPacketIndex.map { Int($0.dataOffset) } }

    /// Average bits per second of the audio data (kAudioFilePropertyBitRate).
    public var bitRate: Int? {
        if dataFormat.isLinearPCM { return Int(dataFormat.sampleRate) * Int(dataFormat.bytesPerFrame) * 8 }
        let frames: Int64
        let bytes: Int64
        if let packetWriter {
            (frames, bytes) = (packetWriter.totalFrames, packetWriter.byteCount)
        } else if let index = loadedPacketIndex {
            (frames, bytes) = (index.totalFrames, index.byteCount)
        } else if dataFormat.bytesPerPacket > 0, dataFormat.framesPerPacket > 0 {
            return Int(Double(dataFormat.bytesPerPacket * 8) * dataFormat.sampleRate / Double(dataFormat.framesPerPacket))
        } else {
            return nil
        }
        guard frames > 0 else { return nil }
        return Int((Double(bytes * 8) * dataFormat.sampleRate / Double(frames)).rounded())
    }

    /// Seconds of audio: the valid frames at the file's rate.
    public var duration: Double { Double(frameCount) / dataFormat.sampleRate }

    /// Checks the packet table to be written against the packets, before `close()` writes it.
    func checkPacketTableToWrite() throws(AudioError) {
        guard let writer = packetWriter, let info = packetTableInfoToWrite else { return }
        guard info.totalFrames <= writer.totalFrames else {
            throw AudioError(.invalidPropertyValue, "\(path): the packet table's \(info.validFrames) valid + \(info.primingFrames) priming + \(info.remainderFrames) remainder frames exceed the \(writer.totalFrames) frames of the \(writer.packetCount) packets written")
        }
    }
}
