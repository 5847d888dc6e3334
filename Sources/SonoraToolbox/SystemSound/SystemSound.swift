import Foundation
import SonoraCore
import SonoraFile

/// A short sound held decoded in memory, ready to play at once (a system sound's contents).
///
/// System Sound Services' rules, from the reference documents: a CAF, AIFF or WAV file, in
/// linear PCM or IMA4, shorter than 30 seconds; anything else is refused with the reason.
/// Decoding happens here, at creation, so playing costs a copy and a start.
public final class SystemSound: Sendable {
    /// The file it was made from.
    public let url: URL
    /// The decoded form: interleaved Float32 at the file's rate and channel count.
    public let format: StreamFormat
    /// The samples, interleaved.
    public let samples: [Float]
    public var frameCount: Int { samples.count / Int(format.channelsPerFrame) }
    public var duration: TimeInterval { Double(frameCount) / format.sampleRate }

    /// The longest sound System Sound Services plays, in seconds (exclusive).
    public static let maximumDuration: TimeInterval = 30

    /// Decodes the file at `url`; refuses what System Sound Services does not play.
    public init(contentsOf url: URL) throws(AudioError) {
        let path = url.path
        let file: AudioFile
        do {
            file = try AudioFile.open(path)
        } catch {
            throw AudioError(error.code == .fileNotFound ? .fileNotFound : .systemSoundUnspecified, "SystemSound: \(error.message)")
        }
        defer { try? file.close() }
        guard [AudioFileType.caf, .aiff, .aifc, .wave].contains(file.fileType) else {
            throw AudioError(.systemSoundUnspecified, "SystemSound: \(path): a \(file.fileType) file; system sounds are CAF, AIFF or WAV")
        }
        let stored = file.dataFormat
        guard stored.isLinearPCM || stored.formatID == .appleIMA4 else {
            throw AudioError(.systemSoundUnspecified, "SystemSound: \(path): \(stored.formatID) data; system sounds are linear PCM or IMA4")
        }
        let seconds = Double(file.frameCount) / stored.sampleRate
        guard seconds < Self.maximumDuration else {
            throw AudioError(.systemSoundExceededMaximumDuration, "SystemSound: \(path): \(String(format: "%.2f", seconds)) s; system sounds are shorter than \(Int(Self.maximumDuration)) s")
        }
        guard file.frameCount > 0, let packets = file.packetCount, packets > 0 else {
            throw AudioError(.systemSoundUnspecified, "SystemSound: \(path): no audio frames")
        }
        let channels = Int(stored.channelsPerFrame)
        let decoded = StreamFormat.linearPCM(sampleRate: stored.sampleRate, channels: channels, sample: .float32)
        var bytes: [UInt8]
        do {
            let read = try file.readPackets(from: 0, count: packets)
            let converter = try AudioConverter(from: stored, to: decoded)
            bytes = try converter.convert(read.bytes)
            bytes += try converter.flush()
        } catch {
            throw AudioError(error.code, "SystemSound: \(path): decoding: \(error.message)")
        }
        // IMA4's last packet is padded past the file's frames: play the file's frames only.
        let count = min(bytes.count / 4, file.frameCount * channels)
        var samples = [Float](repeating: 0, count: count)
        samples.withUnsafeMutableBytes { $0.copyBytes(from: bytes.prefix(count * 4)) }
        self.url = url
        format = decoded
        self.samples = samples
    }
}
