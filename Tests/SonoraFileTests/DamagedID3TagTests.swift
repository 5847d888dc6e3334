import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// An MP3 whose leading ID3v2 tag is damaged: the error says so, where libsndfile (through
/// mpg123) had said the file did not exist.
@Suite struct DamagedID3TagTests {
    /// A 1-second MP3 from ffmpeg (which writes an ID3v2.4 tag first), with bytes 3…9 replaced.
    private func damagedMP3(_ folder: TemporaryFolder, header: [UInt8]) throws -> String {
        let path = folder.path("tagged.mp3")
        _ = try FFmpegReference.ffmpeg(["-f", "lavfi", "-i", "sine=d=1", "-c:a", "libmp3lame", path])
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(Array(bytes[0..<3]) == Array("ID3".utf8))
        bytes.replaceSubrange(3..<10, with: header)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("a tag claiming more bytes than the file has: 'dta?' naming the tag and both sizes")
    func tagLongerThanTheFile() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = try damagedMP3(folder, header: [4, 0, 0, 0x7F, 0x7F, 0x7F, 0x7F])
        let error = try #require(throws: AudioError.self) { try AudioFile.open(path) }
        #expect(error.code == .invalidFileData)
        #expect(error.message.contains("ID3v2 tag at byte 0") && error.message.contains("268435465 bytes"), "\(error.message)")
        #expect(!error.message.contains("does not exist"), "\(error.message)")
    }

    @Test("a tag whose version is 0xFF: 'dta?' saying the version is not one")
    func tagWithABadVersion() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = try damagedMP3(folder, header: [0xFF, 0, 0, 0, 0, 0, 0x23])
        let error = try #require(throws: AudioError.self) { try ExtAudioFile.open(path) }
        #expect(error.code == .invalidFileData && error.message.contains("version 255.0"), "\(error.message)")
    }

    @Test("an intact tag still opens: the 1-second file reads its 44,100 frames")
    func intactTagOpens() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = try damagedMP3(folder, header: [4, 0, 0, 0, 0, 0, 0x23])
        let file = try AudioFile.open(path)
        #expect(file.dataFormat.sampleRate == 44100 && file.frameCount >= 44100)
    }
}
