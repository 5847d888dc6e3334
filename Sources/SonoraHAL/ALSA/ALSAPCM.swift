import CALSA
import SonoraCore
import SonoraDSP

#if canImport(Glibc)
import Glibc
#endif

/// One open ALSA PCM (one direction) and what it granted. Every `snd_pcm_*` call that can
/// fail goes through here (and `PCMNegotiation`) — one chokepoint, where `PCMFaults` can
/// inject errors.
final class ALSAPCM: @unchecked Sendable {
    enum Direction: Sendable {
        case capture, playback
        var alsa: snd_pcm_stream_t { self == .capture ? SND_PCM_STREAM_CAPTURE : SND_PCM_STREAM_PLAYBACK }
        var event: DeviceEvent.Stream { self == .capture ? .capture : .playback }
        var word: String { self == .capture ? "capture" : "playback" }
    }

    let name: String
    let direction: Direction
    let handle: OpaquePointer
    let faults: PCMFaults
    let channels: Int
    let format: DeviceSampleFormat
    let access: DeviceAccess
    let periodFrames: Int
    let periods: Int
    let bufferFrames: Int
    let rate: Int
    let notes: [String]
    /// Poll descriptors, refreshed before every poll (some plugins change them).
    let pollDescriptors: UnsafeMutablePointer<pollfd>
    let pollCapacity = 16
    /// Interleaved or per-channel bytes for read/write access (nil with mmap).
    let transferBytes: UnsafeMutableRawPointer?
    let channelByteBuffers: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    /// Channel pointers into the mmap area for direct rendering, and where it began.
    let directChannels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var directOffset: snd_pcm_uframes_t = 0
    /// Allocated once: reading the status on the I/O thread allocates nothing.
    let statusRecord: OpaquePointer?
    /// On a sound card (not a plugin with no card).
    let isHardware: Bool

    /// Opens `name` and negotiates; throws explained refusals.
    init(
        name: String, direction: Direction, channels: Int, configuration: AudioDeviceConfiguration,
        tree: OpaquePointer, faults: PCMFaults
    ) throws(AudioError) {
        var pcm: OpaquePointer?
        var status = faults.failure(.open)
        if status == 0 {
            ALSAConfiguration.prepareToOpen(name, tree: tree)
            status = snd_pcm_open_lconf(&pcm, name, direction.alsa, SND_PCM_NONBLOCK, tree)
        }
        guard status >= 0, let pcm else {
            if name.hasPrefix("sonoraloop") && ALSAConfiguration.loopPluginPath == nil {
                throw AudioError(.badDevice, "cannot open \(direction.word) PCM '\(name)': Sonora's loopback plugin (\(ALSAConfiguration.loopPluginFileName)) is not beside the binary; build it (swift build --product asound_module_pcm_sonoraloop) or point SONORA_LOOP_PLUGIN at it")
            }
            let code: AudioError.Code = status == -EBUSY ? .devicePermissions : .badDevice
            throw alsaError(code, status, "cannot open \(direction.word) PCM '\(name)' (snd_pcm_open)")
        }
        var negotiated: PCMNegotiation.Result
        do {
            negotiated = try PCMNegotiation.negotiate(pcm, name: name, direction: direction, channels: channels, configuration: configuration, faults: faults)
        } catch {
            Self.close(pcm, name: name, direction: direction, faults: faults)
            throw error
        }
        self.name = name
        self.direction = direction
        self.handle = pcm
        self.faults = faults
        self.channels = channels
        self.format = negotiated.format
        self.access = negotiated.access
        self.periodFrames = negotiated.periodFrames
        self.periods = negotiated.periods
        self.bufferFrames = negotiated.bufferFrames
        self.rate = configuration.sampleRate
        self.notes = negotiated.notes
        pollDescriptors = .allocate(capacity: pollCapacity)
        channelByteBuffers = .allocate(capacity: max(1, channels))
        directChannels = .allocate(capacity: max(1, channels))
        var record: OpaquePointer?
        snd_pcm_status_malloc(&record)
        statusRecord = record
        var info: OpaquePointer?
        snd_pcm_info_malloc(&info)
        if let info {
            isHardware = snd_pcm_info(pcm, info) >= 0 && snd_pcm_info_get_card(info) >= 0 && snd_pcm_type(pcm) == SND_PCM_TYPE_HW
            snd_pcm_info_free(info)
        } else {
            isHardware = false
        }
        directChannels.initialize(repeating: UnsafeMutablePointer<Float>(bitPattern: 16)!, count: max(1, channels))
        if negotiated.access.isMMap {
            transferBytes = nil
        } else {
            let bytes = negotiated.periodFrames * channels * negotiated.format.byteCount
            let storage = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
            storage.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
            transferBytes = storage
            let perChannel = negotiated.periodFrames * negotiated.format.byteCount
            for channel in 0..<channels { channelByteBuffers[channel] = storage + channel * perChannel }
        }
    }

    deinit {
        Self.close(handle, name: name, direction: direction, faults: faults)
        pollDescriptors.deallocate()
        channelByteBuffers.deallocate()
        directChannels.deallocate()
        if let statusRecord { snd_pcm_status_free(statusRecord) }
        transferBytes?.deallocate()
    }

    var streamFormat: DeviceStreamFormat {
        DeviceStreamFormat(
            pcmName: name, channels: channels, sampleFormat: format.rawValue, access: access.rawValue,
            periodFrames: periodFrames, periods: periods, bufferFrames: bufferFrames)
    }

    /// Closes a PCM; a failure is logged (the descriptor is gone either way).
    private static func close(_ pcm: OpaquePointer, name: String, direction: Direction, faults: PCMFaults) {
        var status = snd_pcm_close(pcm)
        let injected = faults.failure(.close)
        if injected != 0 { status = injected }
        if status < 0 {
            ALSAConfiguration.alsaLogger.warning("closing \(direction.word) PCM '\(name)' failed (snd_pcm_close): \(String(cString: snd_strerror(status)))")
        }
    }

    // MARK: The calls the I/O thread makes

    /// Calls `body` unless a failure of `operation` is injected.
    @inline(__always)
    private func call(_ operation: PCMFaults.Operation, _ body: () -> Int32) -> Int32 {
        let injected = faults.failure(operation)
        return injected != 0 ? injected : body()
    }

    @inline(__always)
    private func callFrames(_ operation: PCMFaults.Operation, _ body: () -> Int) -> Int {
        let injected = faults.failure(operation)
        return injected != 0 ? Int(injected) : body()
    }

    @inline(__always) func prepare() -> Int32 { call(.prepare) { snd_pcm_prepare(handle) } }
    @inline(__always) func start() -> Int32 { call(.start) { snd_pcm_start(handle) } }
    @inline(__always) func drop() -> Int32 { call(.drop) { snd_pcm_drop(handle) } }
    @inline(__always) func resume() -> Int32 { call(.resume) { snd_pcm_resume(handle) } }
    @inline(__always) func state() -> snd_pcm_state_t { snd_pcm_state(handle) }
    @inline(__always) func link(to other: ALSAPCM) -> Int32 { call(.link) { snd_pcm_link(handle, other.handle) } }

    @inline(__always)
    func availUpdate() -> Int { callFrames(.availUpdate) { snd_pcm_avail_update(handle) } }

    /// Available frames with the hardware pointer read first (`snd_pcm_avail`, ALSA's
    /// hwsync): a card's DMA position now, not the one of its last period interrupt that
    /// `snd_pcm_avail_update` returns. Timer-driven wake-ups need the position now.
    @inline(__always)
    func availSynced() -> Int { callFrames(.availUpdate) { snd_pcm_avail(handle) } }

    /// The sound card the PCM sits on (−1 for plugins with no card).
    var card: Int32 {
        var info: OpaquePointer?
        snd_pcm_info_malloc(&info)
        guard let info else { return -1 }
        defer { snd_pcm_info_free(info) }
        guard snd_pcm_info(handle, info) >= 0 else { return -1 }
        return snd_pcm_info_get_card(info)
    }

    /// The frames ALSA says sit between the application and the converter (`snd_pcm_delay`).
    func delay() -> Int? {
        var frames: snd_pcm_sframes_t = 0
        return call(.delay) { snd_pcm_delay(handle, &frames) } >= 0 ? frames : nil
    }

    /// Refreshes and returns the poll descriptors (count), or a negative status.
    @inline(__always)
    func refreshPollDescriptors() -> Int32 {
        call(.pollDescriptors) { snd_pcm_poll_descriptors(handle, pollDescriptors, UInt32(pollCapacity)) }
    }

    /// Translates `poll` results for this PCM's descriptors into events.
    @inline(__always)
    func revents(count: Int32) -> UInt16 {
        var events: UInt16 = 0
        guard call(.pollRevents, { snd_pcm_poll_descriptors_revents(handle, pollDescriptors, UInt32(count), &events) }) >= 0 else { return UInt16(POLLERR) }
        return events
    }

    /// Reads `frames` frames into `destination` (canonical float, starting at `offset`).
    /// Returns frames read or a negative status.
    @inline(__always)
    func read(into destination: AudioBufferList, offset: Int, frames: Int) -> Int {
        if access.isMMap {
            return transferMMap(destination, offset: offset, frames: frames, writing: false)
        }
        return transferReadWrite(destination, offset: offset, frames: frames, writing: false)
    }

    /// Writes `frames` frames from `source` (canonical float, starting at `offset`).
    @inline(__always)
    func write(from source: AudioBufferList, offset: Int, frames: Int) -> Int {
        if access.isMMap {
            return transferMMap(source, offset: offset, frames: frames, writing: true)
        }
        return transferReadWrite(source, offset: offset, frames: frames, writing: true)
    }

    /// For FLOAT_LE non-interleaved mmap whose next `frames` frames are contiguous:
    /// begins the mmap transfer and returns a buffer list over the device's own memory
    /// (to render into, then `commitDirectPeriod`). Otherwise `list` is nil and nothing
    /// was begun. A negative status is an ALSA error.
    @inline(__always)
    func beginDirectPeriod(frames: Int) -> (list: AudioBufferList?, status: Int32) {
        guard access == .mmapNonInterleaved && format == .float32LE else { return (nil, 0) }
        let available = availUpdate()
        if available < 0 { return (nil, Int32(available)) }
        guard available >= frames else { return (nil, 0) }
        var areas: UnsafePointer<snd_pcm_channel_area_t>?
        var offset: snd_pcm_uframes_t = 0
        var count = snd_pcm_uframes_t(frames)
        let status = call(.mmapBegin) { snd_pcm_mmap_begin(handle, &areas, &offset, &count) }
        if status < 0 { return (nil, status) }
        guard let areas, Int(count) == frames else {
            // Wraps around the buffer end: give it back untouched, copy this period instead.
            if count > 0 { _ = snd_pcm_mmap_commit(handle, offset, 0) }
            return (nil, 0)
        }
        for channel in 0..<channels {
            let area = areas[channel]
            guard area.step == 32, area.first % 32 == 0, let base = area.addr else { return (nil, 0) }
            directChannels[channel] = (base + Int(area.first) / 8).assumingMemoryBound(to: Float.self) + Int(offset)
        }
        directOffset = offset
        return (AudioBufferList(channels: directChannels, channelCount: channels, frameCount: frames), 0)
    }

    @inline(__always)
    func commitDirectPeriod(frames: Int) -> Int32 {
        let committed = callFrames(.mmapCommit) { snd_pcm_mmap_commit(handle, directOffset, snd_pcm_uframes_t(frames)) }
        if committed < 0 { return Int32(committed) }
        return committed == frames ? 0 : -EPIPE
    }

    /// When the xrun happened, host ns, from the status trigger time stamp a kernel driver
    /// sets at the xrun; nil for plugin PCMs (no card), whose stamp means something else.
    func xrunTime() -> UInt64? {
        guard isHardware, let status = statusRecord else { return nil }
        guard snd_pcm_status(handle, status) >= 0, snd_pcm_status_get_state(status) == SND_PCM_STATE_XRUN else { return nil }
        var stamp = snd_htimestamp_t()
        snd_pcm_status_get_trigger_htstamp(status, &stamp)
        return UInt64(stamp.tv_sec) * 1_000_000_000 + UInt64(stamp.tv_nsec)
    }

    /// Writes `frames` frames of silence (prefill).
    func writeSilence(frames: Int, scratch: AudioBufferList) -> Int {
        scratch.clear()
        var done = 0
        while done < frames {
            let chunk = min(frames - done, scratch.frameCount)
            let written = write(from: scratch, offset: 0, frames: chunk)
            if written < 0 { return written }
            if written == 0 { break }
            done += written
        }
        return done
    }

    private func transferMMap(_ buffers: AudioBufferList, offset: Int, frames: Int, writing: Bool) -> Int {
        // mmap_begin offers what the last avail_update saw; update first (ALSA requires it,
        // and it is where a playback underrun shows).
        let available = availUpdate()
        if available < 0 { return available }
        var done = 0
        while done < frames {
            var areas: UnsafePointer<snd_pcm_channel_area_t>?
            var areaOffset: snd_pcm_uframes_t = 0
            var count = snd_pcm_uframes_t(frames - done)
            let status = call(.mmapBegin) { snd_pcm_mmap_begin(handle, &areas, &areaOffset, &count) }
            if status < 0 { return Int(status) }
            guard let areas, count > 0 else { break }
            for channel in 0..<channels {
                let area = areas[channel]
                let stride = Int(area.step) / 8
                let base = area.addr! + Int(area.first) / 8 + Int(areaOffset) * stride
                let samples = buffers.samples(channel) + offset + done
                if writing {
                    if format == .float32LE && stride == 4 {
                        (base.assumingMemoryBound(to: Float.self)).update(from: samples, count: Int(count))
                    } else {
                        SampleConversion.encode(samples, count: Int(count), into: base, sample: format.sample, bigEndian: format.isBigEndian, stride: stride)
                    }
                } else {
                    if format == .float32LE && stride == 4 {
                        samples.update(from: base.assumingMemoryBound(to: Float.self), count: Int(count))
                    } else {
                        SampleConversion.decode(UnsafeRawPointer(base), sample: format.sample, bigEndian: format.isBigEndian, stride: stride, into: samples, count: Int(count))
                    }
                }
            }
            let committed = callFrames(.mmapCommit) { snd_pcm_mmap_commit(handle, areaOffset, count) }
            if committed < 0 { return committed }
            if committed != count { return -Int(EPIPE) }
            done += Int(count)
        }
        return done
    }

    private func transferReadWrite(_ buffers: AudioBufferList, offset: Int, frames: Int, writing: Bool) -> Int {
        guard let bytes = transferBytes else { return -Int(EINVAL) }
        var done = 0
        let sampleBytes = format.byteCount
        let interleaved = access.isInterleaved
        while done < frames {
            let count = min(frames - done, periodFrames)
            if writing {
                for channel in 0..<channels {
                    let start = interleaved ? bytes + channel * sampleBytes : channelByteBuffers[channel]!
                    let stride = interleaved ? channels * sampleBytes : sampleBytes
                    SampleConversion.encode(buffers.samples(channel) + offset + done, count: count, into: start, sample: format.sample, bigEndian: format.isBigEndian, stride: stride)
                }
                let written = callFrames(.write) {
                    interleaved
                        ? snd_pcm_writei(handle, bytes, snd_pcm_uframes_t(count))
                        : snd_pcm_writen(handle, channelByteBuffers, snd_pcm_uframes_t(count))
                }
                if written < 0 { return written }
                if written == 0 { break }
                done += written
            } else {
                let read = callFrames(.read) {
                    interleaved
                        ? snd_pcm_readi(handle, bytes, snd_pcm_uframes_t(count))
                        : snd_pcm_readn(handle, channelByteBuffers, snd_pcm_uframes_t(count))
                }
                if read < 0 { return read }
                if read == 0 { break }
                for channel in 0..<channels {
                    let start = interleaved ? bytes + channel * sampleBytes : channelByteBuffers[channel]!
                    let stride = interleaved ? channels * sampleBytes : sampleBytes
                    SampleConversion.decode(UnsafeRawPointer(start), sample: format.sample, bigEndian: format.isBigEndian, stride: stride, into: buffers.samples(channel) + offset + done, count: read)
                }
                done += read
            }
        }
        return done
    }
}
