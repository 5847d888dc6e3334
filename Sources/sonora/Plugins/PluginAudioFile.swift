import Foundation
import SonoraCore
import SonoraFile

/// Whole-file float I/O for `plugins apply`.
enum PluginAudioFile {
    static func read(_ path: String) throws(AudioError) -> (channels: [[Float]], sampleRate: Double) {
        let file = try AudioFile.open(path)
        defer { try? file.close() }
        let channelCount = Int(file.dataFormat.channelsPerFrame)
        let block = 8192
        let buffers = try OwnedAudioBufferList(channelCount: channelCount, frameCapacity: block)
        var channels = [[Float]](repeating: [], count: channelCount)
        while true {
            let read = try file.readFrames(into: buffers.list)
            if read == 0 { break }
            for channel in 0..<channelCount {
                channels[channel].append(contentsOf: UnsafeBufferPointer(start: buffers.list.samples(channel), count: read))
            }
        }
        return (channels, file.dataFormat.sampleRate)
    }

    static func write(_ channels: [[Float]], sampleRate: Double, to path: String, erase: Bool) throws(AudioError) {
        let format = StreamFormat.linearPCM(sampleRate: sampleRate, channels: channels.count, sample: .float32)
        let file = try AudioFile.create(path, type: AudioFileType(pathExtension: URL(fileURLWithPath: path).pathExtension) ?? .wave, format: format, erase: erase)
        let frames = channels.first?.count ?? 0
        let block = 8192
        let buffers = try OwnedAudioBufferList(channelCount: channels.count, frameCapacity: block)
        var position = 0
        while position < frames {
            let count = min(block, frames - position)
            for (index, channel) in channels.enumerated() {
                channel.withUnsafeBufferPointer {
                    buffers.list.samples(index).update(from: $0.baseAddress! + position, count: count)
                }
            }
            do { try file.writeFrames(from: buffers.list(frameCount: count)) } catch {
                file.abandon()
                throw error
            }
            position += count
        }
        try file.close()
    }
}
