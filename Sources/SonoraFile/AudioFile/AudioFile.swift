import CSndfile
import Foundation
import SonoraCore
import SonoraDSP

/// An audio file (Core Audio's AudioFileID / ExtAudioFile for PCM), read and
/// written through libsndfile as canonical Float32 frames.
///
/// Files being created are written under a temporary name beside the target
/// (`.NAME.partial-PID`) and renamed into place by `close()`, so a failed or abandoned
/// write never leaves a file that looks complete. Recordings set
/// `keepsWrittenAudioOnFailure` and call `updateHeader()` now and then instead: what was
/// written survives a full disk and a killed process (`recoverStalePartials` finds it).
public final class AudioFile {
    public enum Mode: Sendable { case read, readWrite }

    public let path: String
    public let fileType: AudioFileType
    /// The data format in the file.
    public let dataFormat: StreamFormat
    private var handle: OpaquePointer?
    /// For the property extensions in this module.
    var sndfileHandle: OpaquePointer? { handle }
    private var temporaryPath: String?
    /// For integer files being written: the factor Sonora scales samples by itself
    /// (2^(bits−1)). libsndfile's own float→integer write scales by 2^(bits−1)−1 but
    /// reads back by 2^(bits−1), so a 16-bit copy through it changed loud samples by a step.
    private var integerWriteScale: Float?
    private var integerWriteCeiling: Float = 0
    private var failed = false
    /// For recordings: after a failed write, `close()` still finishes the file (its header
    /// sized to what was written) and moves it into place instead of removing it.
    public var keepsWrittenAudioOnFailure = false
    private var scratch: [Float] = []
    private var shortScratch: [Int16] = []

    /// Set instead of `handle` for IMA4 in CAF and AIFC, which Sonora reads and writes itself.
    private var ima4: IMA4File?
    /// The IMA4 writer, for `writePackets` (packets an encoder made elsewhere).
    var ima4File: IMA4File? { ima4 }
    func updateFrameCountFromIMA4() { if let ima4 { frames = ima4.frameCount } }

    /// Compressed packets (AudioFile+PacketFiles): the index of a file opened for reading —
    /// the only access for packet files (M4A, ADTS, AAC in CAF …), found on first use for
    /// compressed files libsndfile also decodes (FLAC, Ogg, MP3, ALAC in CAF) — or the
    /// writer of a packet file being created.
    var packetIndex: PacketIndex?
    var packetIndexSearched = false
    var packetWriter: PacketWriter?
    /// For a packet file being created: the table `close()` writes (priming, remainder).
    var packetTableInfoToWrite: AudioFilePacketTableInfo?
    /// The magic cookie a packet file being created was given.
    var createdCookie: [UInt8]?
    /// Whether the file holds packets only (no libsndfile or IMA4 frame access).
    var isPacketFile: Bool { handle == nil && ima4 == nil && (packetIndex != nil || packetWriter != nil) }

    /// AIFF/AIFC/CAF markers and loops, which Sonora keeps itself (AudioFile+Markers):
    /// read when the file is opened, or set for a new file and appended when it is closed.
    var containerMarkers: [AudioFileMarker] = []
    var containerLoops: [AudioFileLoop] = []
    var containerMarkersSet = false
    /// Whether the file is being created (markers can still be added).
    var isBeingCreated: Bool { temporaryPath != nil }

    private init(path: String, ima4: IMA4File, temporaryPath: String?) {
        self.path = path
        self.ima4 = ima4
        self.temporaryPath = temporaryPath
        dataFormat = ima4.format
        fileType = ima4.container == .aifc ? .aifc : .caf
        frames = ima4.frameCount
    }

    private init(path: String, handle: OpaquePointer, info: SF_INFO, temporaryPath: String?) throws(AudioError) {
        self.path = path
        self.handle = handle
        self.temporaryPath = temporaryPath
        dataFormat = SndfileFormat.streamFormat(info)
        guard let type = AudioFileType(sndfileMajor: info.format & SndfileFormat.typeMask) else {
            sf_close(handle)
            throw AudioError(.unsupportedFileType, "\(path): a container Sonora does not handle")
        }
        fileType = type == .aiff && !dataFormat.isLinearPCM ? .aifc : type
        frames = Int(info.frames)
    }

    /// A packet file: read through `index`, or being created through `writer`.
    init(path: String, type: AudioFileType, format: StreamFormat, index: PacketIndex?, writer: PacketWriter?, temporaryPath: String?) {
        self.path = path
        fileType = type
        dataFormat = format
        packetIndex = index
        packetIndexSearched = true
        packetWriter = writer
        self.temporaryPath = temporaryPath
        frames = index.map { Int($0.validFrames) } ?? 0
    }

    deinit {
        if handle != nil || ima4 != nil || packetWriter != nil { try? close() }
    }

    // MARK: Opening

    /// Opens an existing file (AudioFileOpenURL). `typeHint` is tried first for
    /// containers without a reliable signature (ADTS, MP3); when the content clearly says
    /// another container, the content decides, as in Core Audio.
    ///
    /// PCM, IMA4 and the compressed files libsndfile decodes (FLAC, Ogg, MP3, ALAC in CAF)
    /// read as frames, as before, and as packets too; the others (AAC or ALAC in M4A/MP4,
    /// ADTS AAC, AAC/Opus/MP3/FLAC in CAF) are packet files, read with `readPackets`.
    public static func open(_ path: String, mode: Mode = .read, typeHint: AudioFileType? = nil) throws(AudioError) -> AudioFile {
        try open(path, mode: mode, typeHint: typeHint, asPackets: false)
    }

    /// `asPackets`: the caller decodes packets itself (ExtAudioFile), so an MP3 or an Ogg Opus
    /// file opens straight as a packet file — libsndfile's frame reader (mpg123, libopusfile)
    /// would scan it for nothing.
    static func open(_ path: String, mode: Mode, typeHint: AudioFileType?, asPackets: Bool) throws(AudioError) -> AudioFile {
        try checkReadable(path)
        // Otherwise libsndfile's refusal would read as a bad file ('dta?').
        if mode == .readWrite && !FileManager.default.isWritableFile(atPath: path) {
            throw AudioError(.filePermission, "\(path): not writable")
        }
        if let size = try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int, size == 0 {
            throw AudioError(.invalidFileData, "\(path): an empty file (0 bytes) holds no audio")
        }
        try checkID3v2Tag(path)
        if let ima4 = try IMA4File.open(path) {
            let file = AudioFile(path: path, ima4: ima4, temporaryPath: nil)
            try file.readContainerMarkers()
            return file
        }
        // Compressed CAF: Sonora's own packet reader. Its complaints matter only when
        // libsndfile cannot read the file either (libsndfile's ALAC files carry a pakt whose
        // remainder can be off; they still read as frames).
        var cafPackets: PacketIndex?
        var cafProblem: AudioError?
        do { cafPackets = try CAFPacketReader.open(path) } catch { cafProblem = error }
        if asPackets, mode == .read, cafPackets == nil, let sniffed = lossyStreamType(path) {
            if let file = try? openPacketFile(path, mode: mode, cafPackets: nil, typeHint: typeHint ?? sniffed, sndfileReason: "not tried") {
                return file
            }
        }
        // ALAC from 24-bit source data (desc flags 3): libsndfile's ALAC reader returned 16
        // times the frames of such a file (AudioRecorderDepthTests); libavcodec's decoder
        // reads it bit-exact, so Sonora's own packet reader takes it.
        if mode == .read, let packets = cafPackets, packets.format.formatID == .appleLossless, packets.format.formatFlags.rawValue == 3 {
            return try openPacketFile(path, mode: mode, cafPackets: packets, typeHint: typeHint, sndfileReason: "not tried (24-bit ALAC)")
        }
        var info = SF_INFO()
        let opened = SndfileOpening.open(path, mode: mode == .read ? Int32(SFM_READ) : Int32(SFM_RDWR), info: &info)
        guard case .success(let handle) = opened else {
            let reason = opened.failureReason
            if let cafProblem { throw cafProblem }
            let unrecognised = reason.contains("not recognised") || reason.contains("unknown format")
            // A file libsndfile knows but finds broken keeps libsndfile's verdict; one it does not
            // know may be a container libavformat demuxes (M4A, ADTS …) or compressed CAF.
            guard unrecognised || cafPackets != nil else { throw AudioError(.invalidFileData, "\(path): \(reason)") }
            return try openPacketFile(path, mode: mode, cafPackets: cafPackets, typeHint: typeHint, sndfileReason: reason)
        }
        if (info.format & SndfileFormat.typeMask) == Int32(SF_FORMAT_CAF) && (info.format & SndfileFormat.endianMask) == 0 {
            // libsndfile does not always say which byte order a CAF file's PCM has; its desc chunk does.
            if let littleEndian = cafIsLittleEndian(path) {
                info.format |= littleEndian ? Int32(SF_ENDIAN_LITTLE) : Int32(SF_ENDIAN_BIG)
            }
        }
        let file = try AudioFile(path: path, handle: handle, info: info, temporaryPath: nil)
        if cafPackets != nil || cafProblem != nil {
            file.packetIndex = cafPackets
            file.packetIndexSearched = true
        }
        try file.readContainerMarkers()
        return file
    }

    /// MP3 (an ID3v2 tag or an MPEG audio frame sync first) or Ogg Opus, from the first bytes.
    private static func lossyStreamType(_ path: String) -> AudioFileType? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: 36), head.count >= 4 else { return nil }
        let bytes = [UInt8](head)
        if bytes[0..<3] == [0x49, 0x44, 0x33] || (bytes[0] == 0xFF && bytes[1] & 0xE0 == 0xE0 && bytes[1] & 0x06 == 0x02) { return .mp3 }
        if bytes.count >= 36, bytes[0..<4] == [0x4F, 0x67, 0x67, 0x53], Array(bytes[28..<36]) == Array("OpusHead".utf8) { return .ogg }
        return nil
    }

    /// A leading ID3v2 tag that claims more bytes than the file has hides all of it:
    /// libsndfile (through mpg123) then reports the file as not existing. Say what is wrong.
    private static func checkID3v2Tag(_ path: String) throws(AudioError) {
        guard let handle = FileHandle(forReadingAtPath: path) else { return }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: 10), head.count == 10, head.starts(with: [0x49, 0x44, 0x33]),
              let fileSize = try? handle.seekToEnd()
        else { return }
        let problem: String? = [UInt8](head).withUnsafeBytes { bytes in
            guard let size = StreamTag.id3v2Size(bytes) else { return StreamTag.id3v2Problem(bytes) }
            return size > Int(fileSize) ? "it claims \(size) bytes, but the file has \(fileSize)" : nil
        }
        if let problem { throw AudioError(.invalidFileData, "\(path): the ID3v2 tag at byte 0 is damaged: \(problem)") }
    }

    /// The byte order of a CAF file's linear PCM, from the format flags of its `desc` chunk.
    private static func cafIsLittleEndian(_ path: String) -> Bool? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let header = try? handle.read(upToCount: 36), header.count == 36 else { return nil }
        let bytes = [UInt8](header)
        guard bytes[0..<4] == [0x63, 0x61, 0x66, 0x66], bytes[8..<12] == [0x64, 0x65, 0x73, 0x63],
              bytes[28..<32] == [0x6C, 0x70, 0x63, 0x6D]
        else { return nil }
        let flags = UInt32(bytes[32]) << 24 | UInt32(bytes[33]) << 16 | UInt32(bytes[34]) << 8 | UInt32(bytes[35])
        return flags & 2 != 0  // kCAFLinearPCMFormatFlagIsLittleEndian
    }

    /// Creates a file of `type` holding `format` (AudioFileCreateWithURL). Refuses to
    /// replace an existing file unless `erase` is true.
    ///
    /// Compressed formats libsndfile cannot encode (AAC, MP3 packets; anything in M4A/MP4,
    /// ADTS) — and any compressed format given with a `magicCookie`, which says the caller
    /// brings encoded packets — make a packet file, written with `writePackets`; ALAC in
    /// CAF, FLAC and Ogg Opus/Vorbis without a cookie are encoded from frames by libsndfile, as before.
    ///
    /// `packetTableReserve`: for recordings of variable-size packets into CAF, bytes kept for
    /// the packet table in front of the data, so `updateHeader()` keeps the file readable while
    /// packets are still being appended (about 3 bytes a packet: 64 KiB is hours of ALAC).
    public static func create(
        _ path: String, type: AudioFileType, format: StreamFormat, magicCookie: [UInt8]? = nil, erase: Bool = false,
        packetTableReserve: Int = 0
    ) throws(AudioError) -> AudioFile {
        try format.validate()
        if FileManager.default.fileExists(atPath: path) && !erase {
            throw AudioError(.permissions, "\(path) exists; pass erase to replace it")
        }
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = partialPath(for: path)
        if let file = try createPacketFile(path, temporary: temporary, type: type, format: format, magicCookie: magicCookie, tableReserve: packetTableReserve) {
            return file
        }
        if format.formatID == .appleIMA4 && (type == .caf || type == .aifc) {
            let ima4 = try IMA4File.create(temporary, format: format, container: type == .caf ? .caf : .aifc)
            return AudioFile(path: path, ima4: ima4, temporaryPath: temporary)
        }
        guard let word = SndfileFormat.word(for: format, in: type) else {
            throw AudioError(.unsupportedDataFormat, "\(path): a \(type) file cannot hold \(format)")
        }
        var info = SF_INFO(frames: 0, samplerate: Int32(format.sampleRate), channels: Int32(format.channelsPerFrame), format: word, sections: 0, seekable: 0)
        let opened = SndfileOpening.open(temporary, mode: Int32(SFM_WRITE), info: &info)
        guard case .success(let handle) = opened else {
            let reason = opened.failureReason
            // libsndfile may have created the file before refusing the format (Opus at 44.1 kHz).
            unlink(temporary)
            let code: AudioError.Code = reason.contains("only supports") ? .unsupportedDataFormat : .unspecified
            throw AudioError(FileManager.default.isWritableFile(atPath: directory.isEmpty ? "." : directory) ? code : .filePermission, "\(path): \(reason)")
        }
        // No timestamped PEAK chunk: the same audio gives the same bytes.
        sf_command(handle, Int32(SFC_SET_ADD_PEAK_CHUNK), nil, Int32(SF_FALSE))
        let file = try AudioFile(path: path, handle: handle, info: info, temporaryPath: temporary)
        if let bits = integerBits(word) {
            // Unnormalized floats, scaled and clipped by Sonora in one vector pass (libsndfile's
            // clipping loop does not vectorize, and without it values past full scale wrap).
            sf_command(handle, Int32(SFC_SET_NORM_FLOAT), nil, Int32(SF_FALSE))
            let scale = Float(sign: .plus, exponent: bits - 1, significand: 1)
            file.integerWriteScale = scale
            // 2^31 − 1 is no Float: the largest below 2^31 is the top for 32-bit files.
            file.integerWriteCeiling = bits <= 24 ? scale - 1 : scale.nextDown
        }
        return file
    }

    /// Room left in a WAV's 4 GiB for its header chunks (fmt, fact, cue, smpl, LIST …).
    public static let riffHeaderAllowance = 1 << 16

    /// The integer width libsndfile converts floats to for `word`, where its write scale is the asymmetric one.
    private static func integerBits(_ word: Int32) -> Int? {
        switch word & SndfileFormat.subMask {
        case Int32(SF_FORMAT_PCM_S8), Int32(SF_FORMAT_PCM_U8): 8
        case Int32(SF_FORMAT_PCM_16): 16
        case Int32(SF_FORMAT_PCM_24): 24
        case Int32(SF_FORMAT_PCM_32): 32
        default: nil
        }
    }

    private static func checkReadable(_ path: String) throws(AudioError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw AudioError(.fileNotFound, "\(path): no such file")
        }
        guard !isDirectory.boolValue else { throw AudioError(.invalidFileData, "\(path) is a directory") }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw AudioError(.filePermission, "\(path): not readable")
        }
    }

    // MARK: Properties

    private var frames: Int

    /// Frames of audio in the file (the audio data packet count for PCM; for packet files
    /// the valid frames, priming and remainder left out, where the packet table says).
    public var frameCount: Int { frames }

    /// For the packet extensions in this module.
    func setFrameCount(_ count: Int) { frames = count }
    func markFailed() { failed = true }

    /// Seconds of audio (EstimatedDuration).
    public var estimatedDuration: Double { Double(frames) / dataFormat.sampleRate }

    /// Title, artist, comment and friends (InfoDictionary), as far as the container keeps them.
    public var info: [String: String] {
        guard let handle else { return [:] }
        let keys: [(String, Int32)] = [
            ("title", 1), ("copyright", 2), ("software", 3), ("artist", 4), ("comment", 5), ("date", 6), ("album", 7),
            ("license", 8), ("tracknumber", 9), ("genre", 16),
        ]
        var result: [String: String] = [:]
        for (name, id) in keys {
            if let value = sf_get_string(handle, id) { result[name] = String(cString: value) }
        }
        return result
    }

    /// Sets an info string before any audio is written (title, artist, comment …).
    public func setInfo(_ key: String, _ value: String) throws(AudioError) {
        let ids: [String: Int32] = ["title": 1, "copyright": 2, "software": 3, "artist": 4, "comment": 5, "date": 6, "album": 7, "license": 8, "tracknumber": 9, "genre": 16]
        guard let handle, let id = ids[key] else { throw AudioError(.unsupportedProperty, "\(path): no info key '\(key)'") }
        guard sf_set_string(handle, id, value) == 0 else {
            throw AudioError(.unsupportedProperty, "\(path): \(String(cString: sf_strerror(handle)))")
        }
    }

    // MARK: Reading and writing

    /// Reads up to `destination.frameCount` frames from `startFrame` (the
    /// current position if nil) as canonical Float32; returns the number read (0 at the end).
    public func readFrames(into destination: AudioBufferList, from startFrame: Int? = nil) throws(AudioError) -> Int {
        if isPacketFile { throw packetFileHasNoFrames() }
        if let startFrame { try seek(toFrame: startFrame) }
        if let ima4 { return try ima4.read(into: destination) }
        guard let handle else { throw AudioError(.fileNotOpen, "\(path) is closed") }
        let channels = Int(dataFormat.channelsPerFrame)
        guard destination.channelCount >= channels else {
            throw AudioError(.parameterError, "\(path) has \(channels) channels; the buffer has \(destination.channelCount)")
        }
        if scratch.count < destination.frameCount * channels { scratch = Array(repeating: 0, count: destination.frameCount * channels) }
        let read = scratch.withUnsafeMutableBufferPointer { sf_readf_float(handle, $0.baseAddress, sf_count_t(destination.frameCount)) }
        guard read >= 0 else { throw AudioError(.invalidFileData, "\(path): \(String(cString: sf_strerror(handle)))") }
        scratch.withUnsafeBufferPointer { interleaved in
            Interleaving.deinterleave(interleaved.baseAddress!, channels: channels, frames: Int(read)) { destination.samples($0) }
        }
        return Int(read)
    }

    /// Moves the read/write position to `frame`.
    public func seek(toFrame frame: Int) throws(AudioError) {
        guard frame >= 0 && frame <= frames else {
            throw AudioError(.filePosition, "\(path): cannot seek to frame \(frame) of \(frames)")
        }
        if let ima4 { return ima4.seek(toFrame: frame) }
        guard let handle else { throw AudioError(.fileNotOpen, "\(path) is closed") }
        guard sf_seek(handle, sf_count_t(frame), SEEK_SET) >= 0 else {
            throw AudioError(.filePosition, "\(path): cannot seek to frame \(frame) of \(frames)")
        }
    }

    /// Appends the frames of `source` (canonical Float32), converted to the file's format.
    public func writeFrames(from source: AudioBufferList) throws(AudioError) {
        if isPacketFile { throw packetFileHasNoFrames() }
        let channels = Int(dataFormat.channelsPerFrame)
        guard source.channelCount == channels else {
            failed = true
            throw AudioError(.parameterError, "\(path) has \(channels) channels; the buffer has \(source.channelCount)")
        }
        if let ima4 {
            do { try ima4.write(from: source) } catch {
                failed = true
                throw error
            }
            frames = ima4.frameCount
            return
        }
        guard let handle else { throw AudioError(.fileNotOpen, "\(path) is closed") }
        // RIFF sizes are 32-bit: past them libsndfile would write a WAV whose header lies.
        // Core Audio refuses with 'off?'; RF64 is the container for this.
        if fileType == .wave, dataFormat.bytesPerFrame > 0,
           (frames + source.frameCount) * Int(dataFormat.bytesPerFrame) > Int(UInt32.max) - Self.riffHeaderAllowance {
            failed = true
            throw AudioError(.doesNotAllow64BitDataSize, "\(path): a WAV file holds at most 4 GiB of audio; create an RF64 file")
        }
        if scratch.count < source.frameCount * channels { scratch = Array(repeating: 0, count: source.frameCount * channels) }
        scratch.withUnsafeMutableBufferPointer { interleaved in
            Interleaving.interleave(channels: channels, frames: source.frameCount, from: { UnsafePointer(source.samples($0)) }, into: interleaved.baseAddress!)
            if let scale = integerWriteScale, scale != 32768 {
                let ceiling = integerWriteCeiling
                for index in 0..<source.frameCount * channels { interleaved[index] = min(max(interleaved[index] * scale, -scale), ceiling) }
            }
        }
        let written: sf_count_t
        if integerWriteScale == 32768 {
            written = writeShorts(handle, count: source.frameCount * channels, frames: source.frameCount)
        } else {
            written = scratch.withUnsafeBufferPointer { sf_writef_float(handle, $0.baseAddress, sf_count_t(source.frameCount)) }
        }
        guard written == source.frameCount else {
            failed = true
            throw AudioError(.unspecified, "\(path): wrote \(written) of \(source.frameCount) frames: \(String(cString: sf_strerror(handle)))")
        }
        frames += Int(written)
    }

    /// 16-bit files (PCM and FLAC): the interleaved floats in `scratch` become shorts
    /// here, scaled by 32768, clipped and rounded to nearest even in one vector pass,
    /// so libsndfile only copies them (its float path is the asymmetric one).
    private func writeShorts(_ handle: OpaquePointer, count: Int, frames: Int) -> sf_count_t {
        if shortScratch.count < count { shortScratch = Array(repeating: 0, count: count) }
        scratch.withUnsafeBufferPointer { floats in
            shortScratch.withUnsafeMutableBufferPointer { shorts in
                // Adding 1.5 × 2^23 rounds any |x| < 2^22 to an integer (ties to even) that then
                // sits in the low bits of the sum's pattern: integer steps only, no trapping
                // conversion, so the loop vectorizes.
                let magic: Float = 12_582_912
                for index in 0..<count {
                    let clipped = min(max(floats[index] * 32768, -32768), 32767)
                    shorts[index] = Int16(truncatingIfNeeded: Int32(bitPattern: (clipped + magic).bitPattern) &- 0x4B40_0000)
                }
            }
        }
        return shortScratch.withUnsafeBufferPointer { sf_writef_short(handle, $0.baseAddress, sf_count_t(frames)) }
    }

    /// Raw packets through libsndfile (PCM) or Sonora's IMA4 reader; nil if neither can.
    func readRawPackets(from start: Int, count: Int, packetSize: Int) throws(AudioError) -> [UInt8]? {
        if let ima4 { return try ima4.readPackets(from: start, count: count) }
        guard let handle, dataFormat.isLinearPCM else { return nil }
        guard dataFormat.isInterleaved || dataFormat.channelsPerFrame == 1 else { return nil }
        guard sf_seek(handle, sf_count_t(start), SEEK_SET) >= 0 else {
            throw AudioError(.invalidPacketOffset, "\(path): cannot seek to packet \(start)")
        }
        var bytes = [UInt8](repeating: 0, count: count * packetSize)
        let read = bytes.withUnsafeMutableBytes { sf_read_raw(handle, $0.baseAddress, sf_count_t($0.count)) }
        guard read >= 0 else { throw AudioError(.invalidFileData, "\(path): \(String(cString: sf_strerror(handle)))") }
        bytes.removeLast(bytes.count - Int(read))  // in place: a short read is not copied again
        return bytes
    }

    /// As `readRawPackets(from:count:packetSize:)`, straight into `destination` (room for
    /// `count` packets): the bytes read, nil unless libsndfile reads the packets raw (IMA4 and
    /// packet files: nil). No array is made, zeroed and copied again: a file source refilling
    /// a queue's buffers reads once.
    func readRawPackets(from start: Int, count: Int, packetSize: Int, into destination: UnsafeMutableRawPointer) throws(AudioError) -> Int? {
        guard ima4 == nil, let handle, dataFormat.isLinearPCM else { return nil }
        guard dataFormat.isInterleaved || dataFormat.channelsPerFrame == 1 else { return nil }
        guard count > 0 else { return 0 }
        guard sf_seek(handle, sf_count_t(start), SEEK_SET) >= 0 else {
            throw AudioError(.invalidPacketOffset, "\(path): cannot seek to packet \(start)")
        }
        let read = sf_read_raw(handle, destination, sf_count_t(count * packetSize))
        guard read >= 0 else { throw AudioError(.invalidFileData, "\(path): \(String(cString: sf_strerror(handle)))") }
        return Int(read)
    }

    /// Appends raw PCM bytes through libsndfile.
    func writeRaw(_ bytes: [UInt8], frames count: Int) throws(AudioError) {
        guard let handle else { throw AudioError(.fileNotOpen, "\(path) is closed") }
        let written = bytes.withUnsafeBytes { sf_write_raw(handle, $0.baseAddress, sf_count_t($0.count)) }
        guard written == bytes.count else {
            failed = true
            throw AudioError(.unspecified, "\(path): wrote \(written) of \(bytes.count) bytes: \(String(cString: sf_strerror(handle)))")
        }
        frames += count
    }

    /// The encoder's compression level for a file libsndfile encodes (FLAC, Ogg Vorbis, Opus,
    /// MPEG): 0 (fastest, least compression) … 1 (slowest, most). Set it before the first
    /// write; files with no compression level (linear PCM, IMA4, ALAC) refuse it.
    public func setCompressionLevel(_ level: Double) throws(AudioError) {
        guard level.isFinite, (0...1).contains(level) else {
            throw AudioError(.parameterError, "\(path): compression level \(level) is outside 0 … 1")
        }
        guard packetWriter == nil, ima4 == nil, let handle else {
            throw AudioError(.unsupportedProperty, "\(path): \(dataFormat.formatID) has no compression level")
        }
        var value = level
        guard sf_command(handle, Int32(SFC_SET_COMPRESSION_LEVEL), &value, Int32(MemoryLayout<Double>.size)) == Int32(SF_TRUE) else {
            throw AudioError(.unsupportedProperty, "\(path): \(dataFormat.formatID) has no compression level")
        }
    }

    /// Writes the header's sizes for the frames written so far (WAV's RIFF and data
    /// sizes, CAF's data chunk, AIFF's frame count), so the file as it stands on disk
    /// reads as that many frames even if the process dies before `close()`.
    /// A compressed CAF being created gets its packet table too (the next write moves it);
    /// M4A/MP4, ADTS, MP3 and Ogg being created are valid only once closed.
    public func updateHeader() throws(AudioError) {
        if let packetWriter {
            _ = try packetWriter.writeValidSoFar(info: packetTableInfoToWrite)
            return
        }
        if let ima4 {
            try ima4.updateHeader()
            return
        }
        guard let handle else { return }
        guard sf_command(handle, Int32(SFC_UPDATE_HEADER_NOW), nil, 0) == 0 else {
            throw AudioError(.unspecified, "\(path): cannot update the header: \(String(cString: sf_strerror(handle)))")
        }
    }

    /// Closes a file being created without finishing it: the temporary file is removed
    /// and nothing appears under the name (a failed render). An opened file is just closed.
    public func abandon() {
        failed = true
        keepsWrittenAudioOnFailure = false
        try? close()
    }

    /// Finishes the file. A created file appears under its name only now, and
    /// only if every write succeeded (or `keepsWrittenAudioOnFailure` is set); otherwise
    /// the partial file is removed.
    public func close() throws(AudioError) {
        var status: Int32 = 0
        if let writer = packetWriter {
            do {
                try checkPacketTableToWrite()
                packetWriter = nil
                try writer.finish(info: packetTableInfoToWrite)
            } catch {
                packetWriter = nil
                if let temporaryPath { unlink(temporaryPath) }
                self.temporaryPath = nil
                throw error
            }
        } else if packetIndex != nil && handle == nil && ima4 == nil {
            packetIndex = nil
            return
        } else if let ima4 {
            self.ima4 = nil
            do { try ima4.finish() } catch {
                failed = true
            }
        } else {
            guard let handle else { return }
            status = sf_close(handle)
            self.handle = nil
            packetIndex = nil
        }
        guard let temporaryPath else { return }
        self.temporaryPath = nil
        guard status == 0, !failed || keepsWrittenAudioOnFailure else {
            unlink(temporaryPath)
            throw AudioError(.unspecified, "\(path): not written (an earlier write failed)")
        }
        do { try appendContainerMarkers(to: temporaryPath) } catch {
            unlink(temporaryPath)
            throw error
        }
        guard rename(temporaryPath, path) == 0 else {
            unlink(temporaryPath)
            throw AudioError(.filePermission, "\(path): cannot move the finished file into place")
        }
    }
}
