import Foundation
import SonoraCore
import SonoraFile

/// Offline render (kAudioQueueProperty_OfflineRender): the queue renders on the caller's
/// thread, as many frames as asked, deterministically — the queue's thread is brought to a
/// fixed point (everything decodable decoded, callbacks and their enqueues done) before and
/// after each slice, so the output depends only on what the program enqueued.
extension AudioQueue {
    /// The offline render format (AudioQueueSetOfflineRenderFormat): linear PCM at the
    /// queue's sample rate and channel count; nil leaves offline mode. Only while stopped.
    public func setOfflineRenderFormat(_ renderFormat: StreamFormat?) throws(AudioError) {
        let call = "setOfflineRenderFormat"
        try withLock { () throws(AudioError) in
            try requireOpen(call)
            guard !running else { throw error(.queueInvalidRunState, call, "stop the queue before changing its offline render format") }
            guard let renderFormat else {
                offlineFormat = nil
                offlineConverter = nil
                renderer.wakesWorker.store(true, ordering: .relaxed)
                return
            }
            guard renderFormat.isLinearPCM, renderFormat.sampleRate == format.sampleRate,
                  renderFormat.channelsPerFrame == format.channelsPerFrame else {
                throw error(.queueInvalidOfflineMode, call, "\(renderFormat) is not linear PCM at the queue's \(format.sampleRate) Hz and \(format.channelsPerFrame) channels")
            }
            let canonical = StreamFormat.canonical(sampleRate: format.sampleRate, channels: Int(format.channelsPerFrame))
            do throws(AudioError) {
                offlineConverter = renderFormat == canonical ? nil : try AudioConverter(from: canonical, to: renderFormat)
            } catch {
                throw self.error(.queueInvalidOfflineMode, call, error.message)
            }
            offlineFormat = renderFormat
            renderer.wakesWorker.store(false, ordering: .relaxed)
        }
    }

    /// The offline render format, if the queue is in offline mode.
    public var offlineRenderFormat: StreamFormat? { try? withLock { offlineFormat } }

    /// Renders into `output` (canonical: Float32, one buffer per channel) on this thread
    /// (AudioQueueOfflineRender).
    public func offlineRender(into output: AudioBufferList) throws(AudioError) {
        let call = "offlineRender"
        try withLock { () throws(AudioError) in
            try requireOpen(call, playingOut: true)
            guard offlineFormat != nil else {
                throw error(.queueInvalidOfflineMode, call, "the queue is not in offline mode (setOfflineRenderFormat first)")
            }
            guard output.channelCount == Int(format.channelsPerFrame) else {
                throw error(.queueInvalidParameter, call, "the output has \(output.channelCount) channels, the queue \(format.channelsPerFrame)")
            }
            offlineSliceFrames = output.frameCount
        }
        barrier()
        offlineRenderLock.lock()
        renderer.render(output)
        offlineRenderLock.unlock()
        barrier()
    }

    /// Renders `frames` frames and returns them in the offline render format.
    public func offlineRender(frames: Int) throws(AudioError) -> [UInt8] {
        guard frames > 0 && frames <= 1 << 20 else {
            throw error(.queueInvalidParameter, "offlineRender", "\(frames) frames is outside 1…1048576")
        }
        let storage = try OwnedAudioBufferList(channelCount: Int(format.channelsPerFrame), frameCapacity: frames)
        let list = storage.list(frameCount: frames)
        try offlineRender(into: list)
        var canonical: [UInt8] = []
        canonical.reserveCapacity(frames * 4 * list.channelCount)
        for channel in 0..<list.channelCount {
            canonical += UnsafeRawBufferPointer(UnsafeBufferPointer(list[channel]))
        }
        guard let converter = try withLock({ () throws(AudioError) in offlineConverter }) else { return canonical }
        return try converter.convert(canonical)
    }
}
