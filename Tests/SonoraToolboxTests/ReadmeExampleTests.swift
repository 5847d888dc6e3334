import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import SonoraToolbox
import Testing

@Suite("README's audio queue example")
struct ReadmeExampleTests {
    /// The README's ten lines, verbatim but for the file's path and a final dispose.
    @Test func tenLines() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("song.m4a")
        try runTool("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=330:sample_rate=48000:duration=0.3", "-ac", "2", "-c:a", "aac", path])

        let file = try AudioFile.open(path)
        var packet = 0, pcm: [UInt8] = []
        func fill(_ queue: AudioQueue, _ buffer: AudioQueueBuffer) {  // HandleOutputBuffer, on the queue's thread
            guard let read = try? file.readPackets(from: packet, count: 32), !read.bytes.isEmpty else { try? queue.stop(immediate: false); return }
            buffer.fill(with: read.bytes); packet += read.descriptions?.count ?? read.bytes.count / Int(file.dataFormat.bytesPerPacket)
            try? queue.enqueue(buffer, packetDescriptions: read.descriptions ?? [])
        }
        let queue = try AudioQueue(format: file.dataFormat, callback: fill)
        if let cookie = file.magicCookie { try queue.setMagicCookie(cookie) }
        try queue.setOfflineRenderFormat(.linearPCM(sampleRate: file.dataFormat.sampleRate, channels: Int(file.dataFormat.channelsPerFrame), sample: .int16))
        for _ in 0..<3 { fill(queue, try queue.allocateBuffer(byteCapacity: 32 * 4096, packetDescriptionCapacity: 32)) }
        try queue.start(); while queue.isRunning { pcm += try queue.offlineRender(frames: 4096) }

        #expect(queue.converterError == nil, "\(String(describing: queue.converterError))")
        try queue.dispose(immediate: true)
        let expected = try decodedSamples(of: path)
        #expect(pcm.count / 2 >= expected.count)
        #expect(pcm.count / 2 <= expected.count + 2 * 4096)
        let samples = pcm.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        #expect(samples.contains { abs(Int($0)) > 1000 })
    }
}
