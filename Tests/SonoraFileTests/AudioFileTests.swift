import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

@Suite("AudioFile", .enabled(if: soxPath != nil, "sox is not installed"))
struct AudioFileTests {
    /// Removed with its contents when the suite's instance goes away (after each test).
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder(prefix: "sonora-audiofile")
    }

    func path(_ name: String) -> String { folder.path(name) }

    /// What sox decodes a file to: interleaved Float32.
    func soxDecode(_ file: String) throws -> [Float] {
        let raw = path("decoded-\(UUID().uuidString).f32")
        try run(soxPath!, [file, "-t", "f32", "-e", "floating-point", raw])
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    func readAll(_ file: AudioFile) throws -> [Float] {
        let channels = Int(file.dataFormat.channelsPerFrame)
        let buffers = try OwnedAudioBufferList(channelCount: channels, frameCapacity: 1000)
        var interleaved: [Float] = []
        while true {
            let read = try file.readFrames(into: buffers.list)
            if read == 0 { break }
            for frame in 0..<read { for channel in 0..<channels { interleaved.append(buffers.list[channel][frame]) } }
        }
        return interleaved
    }

    @Test(arguments: [
        ("wav", ["-b", "16"], "LEI16@44100x2"), ("wav", ["-b", "24"], "LEI24@44100x2"), ("aiff", ["-b", "16"], "BEI16@44100x2"),
        ("flac", ["-b", "16"], "flac@44100x2"), ("wav", ["-b", "32", "-e", "floating-point"], "LEF32@44100x2"),
    ])
    func readsFilesSoxWroteExactlyAsSoxDecodesThem(case: (ext: String, options: [String], format: String)) throws {
        let file = path("sox.\(`case`.ext)")
        try run(soxPath!, ["-n", "-r", "44100", "-c", "2"] + `case`.options + [file, "synth", "0.5", "sine", "440", "sine", "1200", "gain", "-3"])
        let audio = try AudioFile.open(file)
        #expect(audio.dataFormat.description == `case`.format)
        #expect(audio.frameCount == 22050)
        #expect(abs(audio.estimatedDuration - 0.5) < 1e-9)
        let ours = try readAll(audio)
        let theirs = try soxDecode(file)
        #expect(ours.count == theirs.count && ours.count == 44100)
        let differing = zip(ours, theirs).filter { $0 != $1 }.count
        #expect(differing == 0, "\(differing) samples differ from sox's decode")
        try audio.close()
    }

    @Test func writtenFilesReadBackInSoxAndAppearOnlyWhenClosed() throws {
        let target = path("written.wav")
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        let file = try AudioFile.create(target, type: .wave, format: format)
        try file.setInfo("title", "Sonora test tone")
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 480)
        for block in 0..<10 {
            for frame in 0..<480 {
                let t = Float(block * 480 + frame) / 48000
                buffers.list[0][frame] = 0.5 * sin(2 * .pi * 440 * t)
                buffers.list[1][frame] = Float(block * 480 + frame) / 32768
            }
            try file.writeFrames(from: buffers.list)
        }
        #expect(!FileManager.default.fileExists(atPath: target))  // still under its temporary name
        try file.close()
        #expect(FileManager.default.fileExists(atPath: target))
        let theirs = try soxDecode(target)
        #expect(theirs.count == 9600)
        // Channel 1 holds exact 16-bit values: they must come back exactly.
        #expect((0..<4800).allSatisfy { theirs[$0 * 2 + 1] == Float($0) / 32768 })
        let reopened = try AudioFile.open(target)
        #expect(reopened.info["title"] == "Sonora test tone")
        #expect(reopened.dataFormat == format && reopened.fileType == .wave)
        // Seeking and reading from a frame.
        let one = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 1)
        #expect(try reopened.readFrames(into: one.list, from: 1234) == 1)
        #expect(one.list[1][0] == Float(1234) / 32768)
    }

    @Test(arguments: [false, true])
    func cafKeepsTheByteOrderItWasWrittenIn(bigEndian: Bool) throws {
        let target = path("order-\(bigEndian).caf")
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .int16, bigEndian: bigEndian)
        let file = try AudioFile.create(target, type: .caf, format: format)
        let buffers = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 4)
        buffers.list[0].update(repeating: 0.25)
        try file.writeFrames(from: buffers.list)
        try file.close()
        let reopened = try AudioFile.open(target)
        #expect(reopened.dataFormat == format && reopened.fileType == .caf)
        #expect(try soxDecode(target) == [0.25, 0.25, 0.25, 0.25])
    }

    @Test func aFailedWriteLeavesNoFileBehind() throws {
        let target = path("failed.wav")
        let file = try AudioFile.create(target, type: .wave, format: .linearPCM(sampleRate: 48000, channels: 2, sample: .int16))
        let mono = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 16)
        #expect(throws: AudioError.self) { try file.writeFrames(from: mono.list) }
        #expect(throws: AudioError.self) { try file.close() }
        #expect(!FileManager.default.fileExists(atPath: target))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains("partial") }
        #expect(leftovers.isEmpty)
    }

    @Test func badFilesGiveErrorsNamingTheFile() throws {
        let code = { (body: () throws -> Void) -> AudioError? in
            do { try body() } catch let error as AudioError { return error } catch { return nil }
            return nil
        }
        let missing = code { _ = try AudioFile.open(path("missing.wav")) }
        #expect(missing?.code == .fileNotFound && missing?.message.contains("missing.wav") == true)
        let garbage = path("garbage.wav")
        try Data((0..<4000).map { UInt8(truncatingIfNeeded: $0 &* 37) }).write(to: URL(fileURLWithPath: garbage))
        let junk = code { _ = try AudioFile.open(garbage) }
        #expect(junk?.code == .unsupportedFileType || junk?.code == .invalidFileData)
        #expect(junk?.message.hasPrefix(garbage) == true)
        let empty = path("empty.wav")
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        #expect(code { _ = try AudioFile.open(empty) } != nil)
        let truncated = path("truncated.wav")
        try run(soxPath!, ["-n", "-r", "8000", "-c", "1", "-b", "16", path("whole.wav"), "synth", "0.1", "sine", "300"])
        let whole = try Data(contentsOf: URL(fileURLWithPath: path("whole.wav")))
        try whole.prefix(30).write(to: URL(fileURLWithPath: truncated))
        #expect(code { _ = try AudioFile.open(truncated) } != nil)
        #expect(code { _ = try AudioFile.open(folder.path) }?.code == .invalidFileData)
        let exists = code { _ = try AudioFile.create(path("whole.wav"), type: .wave, format: .linearPCM(sampleRate: 8000, channels: 1, sample: .int16)) }
        #expect(exists?.code == .permissions)
        let floatFLAC = code { _ = try AudioFile.create(path("x.flac"), type: .flac, format: .linearPCM(sampleRate: 8000, channels: 1, sample: .float32)) }
        #expect(floatFLAC?.code == .unsupportedDataFormat)
        let badSeek = code { try AudioFile.open(path("whole.wav")).seek(toFrame: 5000) }
        #expect(badSeek?.code == .filePosition)
    }
}

@Suite("AudioFile formats", .enabled(if: soxPath != nil, "sox is not installed"))
struct AudioFileFormatTests {
    @Test(arguments: [
        (AudioFileType.ogg, StreamFormat.compressed(.vorbis, sampleRate: 44100, channels: 2), "ogg"),
        (AudioFileType.ogg, StreamFormat.compressed(.opus, sampleRate: 48000, channels: 2), "opus"),
        (AudioFileType.caf, StreamFormat.compressed(.appleLossless, sampleRate: 44100, channels: 2), "caf"),
        (AudioFileType.flac, StreamFormat.compressed(.flac, sampleRate: 96000, channels: 2), "flac"),
        (AudioFileType.rf64, StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .float32), "rf64"),
    ])
    func writesAndReadsCompressedAndLargeFileFormats(type: AudioFileType, format: StreamFormat, ext: String) throws {
        let scratch = try TemporaryFolder()
        let path = scratch.path("sonora-format-\(getpid())-\(format.formatID.rawValue.rawValue).\(ext)")
        let file = try AudioFile.create(path, type: type, format: format, erase: true)
        let rate = format.sampleRate
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: Int(rate))
        for frame in 0..<Int(rate) {
            let value = Float(0.25 * sin(2 * Double.pi * 440 * Double(frame) / rate))
            buffers.list[0][frame] = value
            buffers.list[1][frame] = value
        }
        try file.writeFrames(from: buffers.list)
        try file.close()
        let reread = try AudioFile.open(path)
        #expect(reread.dataFormat.formatID == format.formatID)
        #expect(reread.dataFormat.sampleRate == rate)
        #expect(abs(reread.estimatedDuration - 1) < 0.05)
        let back = try OwnedAudioBufferList(channelCount: 2, frameCapacity: Int(rate) + 4096)
        let got = try reread.readFrames(into: back.list)
        let middle = Array(back.list[0][Int(rate) / 4..<min(got, Int(rate) * 3 / 4)])
        let peak = middle.map(abs).max() ?? 0
        #expect(abs(peak - 0.25) < 0.02, "peak \(peak)")
    }

    @Test func readsWhatSoxWroteAsMP3AndVorbis() throws {
        for ext in ["mp3", "ogg"] {
            let scratch = try TemporaryFolder()
            let path = scratch.path("sonora-sox-\(getpid()).\(ext)")
            try run(soxPath!, ["-n", "-r", "44100", "-c", "2", path, "synth", "1", "sine", "440", "gain", "-12"])
            let file = try AudioFile.open(path)
            #expect(file.fileType == (ext == "mp3" ? .mp3 : .ogg))
            #expect(abs(file.estimatedDuration - 1) < 0.1)
        }
    }

    @Test func globalInfoListsTypesAndTheirFormats() {
        #expect(AudioFile.readableTypes.contains(.mp3))
        #expect(AudioFile.writableTypes.contains(.caf) && AudioFile.writableTypes.contains(.wave))
        let wav = AudioFile.writableFormats(for: .wave)
        #expect(wav.contains(.linearPCM(sampleRate: 48000, channels: 2, sample: .int24)))
        // Big-endian WAV is RIFX, which libsndfile writes; Core Audio would refuse it.
        let aiff = AudioFile.writableFormats(for: .aiff)
        #expect(aiff.contains(.linearPCM(sampleRate: 48000, channels: 2, sample: .int16, bigEndian: true)))
        #expect(AudioFile.writableFormats(for: .flac).contains { $0.formatID == .flac })
        #expect(AudioFile.writableFormats(for: .caf).contains { $0.formatID == .appleLossless })
    }
}

@Suite("AudioFile markers and loops")
struct AudioFileMarkerTests {
    @Test func markersAndLoopsSurviveAWriteAndRead() throws {
        let scratch = try TemporaryFolder()
        let path = scratch.path("sonora-markers-\(getpid()).wav")
        let file = try AudioFile.create(path, type: .wave, format: .linearPCM(sampleRate: 44100, channels: 1, sample: .int16), erase: true)
        try file.setMarkers([AudioFileMarker(id: 1, frame: 100, name: "verse"), AudioFileMarker(id: 2, frame: 30000, name: "chorus")])
        try file.setLoops([AudioFileLoop(mode: .forward, start: 1000, end: 20000)])
        let buffers = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 44100)
        try file.writeFrames(from: buffers.list)
        try file.close()
        let reread = try AudioFile.open(path)
        #expect(reread.markers.map(\.frame) == [100, 30000])
        #expect(reread.markers.map(\.id) == [1, 2])
        #expect(reread.loops == [AudioFileLoop(mode: .forward, start: 1000, end: 20000)])
        // The chunks are really there, where other tools look for them.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(bytes.range(of: Data("cue ".utf8)) != nil && bytes.range(of: Data("smpl".utf8)) != nil)
    }

    @Test func containersWithoutMarkersRefuseRatherThanDropThem() throws {
        let scratch = try TemporaryFolder()
        let path = scratch.path("sonora-markers-\(getpid()).flac")
        let file = try AudioFile.create(path, type: .flac, format: .compressed(.flac, sampleRate: 44100, channels: 1), erase: true)
        let markers = #expect(throws: AudioError.self) { try file.setMarkers([AudioFileMarker(id: 1, frame: 5)]) }
        #expect(markers?.code == .unsupportedProperty)
        #expect(throws: AudioError.self) { try file.setLoops([AudioFileLoop(start: 0, end: 10)]) }
        try file.close()
    }
}
