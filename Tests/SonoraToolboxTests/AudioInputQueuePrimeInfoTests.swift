import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import SonoraToolbox
import Testing

/// The padding of an encoded recording's last packet: the input queue says how many frames
/// of it are not the capture's (the encoder's prime info), so the file's packet table trims them.
@Suite("Input queue prime info")
struct AudioInputQueuePrimeInfoTests {
    @Test("ALAC: 10,000 frames make 3 packets of 4096; 2288 trailing frames; the file trimmed by its table reads 10,000")
    func alacTrailingFramesTrimTheFile() throws {
        let scratch = try TemporaryFolder()
        let format = StreamFormat.compressed(.appleLossless, sampleRate: 44100, channels: 2)
        let recording = InputRecording()
        let queue = try inputQueue(format, recording: recording, byteCapacity: 40_000, descriptions: 8)
        defer { try? queue.dispose() }
        let captured = sixteenBitSignal(frames: 10_000, channels: 2)
        try queue.start()
        try queue.offlineCapture(frames: captured, sliceFrames: 480)
        try queue.stop(immediate: false)

        let prime = queue.encoderPrimeInfo
        let descriptions = recording.deliveries.flatMap(\.descriptions)
        // The last packet is short (1808 frames); a CAF counts it as 4096, the rest padding.
        #expect(descriptions.count == 3 && descriptions.last?.variableFramesInPacket == 1808)
        let packetFrames = descriptions.count * 4096
        #expect(prime.leadingFrames == 0 && prime.trailingFrames == 2288)

        let path = scratch.path("trimmed.caf")
        let file = try AudioFile.create(path, type: .caf, format: format, magicCookie: try queue.magicCookie)
        for delivery in recording.deliveries { try file.writePackets(delivery.bytes, descriptions: delivery.descriptions) }
        try file.setPacketTableInfo(AudioFilePacketTableInfo(
            validFrames: Int64(packetFrames - prime.leadingFrames - prime.trailingFrames),
            primingFrames: Int32(prime.leadingFrames), remainderFrames: Int32(prime.trailingFrames)))
        try file.close()
        let reread = try AudioFile.open(path)
        #expect(reread.frameCount == 10_000)
        #expect(reread.packetTableInfo?.remainderFrames == 2288)
    }

    @Test("PCM and a queue that encoded nothing: no priming, no padding")
    func pcmHasNoPrimeInfo() throws {
        let recording = InputRecording()
        let queue = try inputQueue(.linearPCM(sampleRate: 48000, channels: 1, sample: .int16), recording: recording, byteCapacity: 960)
        defer { try? queue.dispose() }
        try queue.start()
        try queue.offlineCapture(frames: sixteenBitSignal(frames: 1000, channels: 1))
        try queue.stop(immediate: false)
        #expect(queue.encoderPrimeInfo == AudioConverterPrimeInfo())
    }
}
