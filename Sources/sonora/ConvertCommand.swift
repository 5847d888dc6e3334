import ArgumentParser
import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile

struct ConvertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract: "Convert an audio file to another container, sample format, channel count or rate.",
        discussion: """
            In the spirit of afconvert: -f names the output container (Core Audio's code
            such as caff, WAVE, AIFF, m4af, adts, MPG3, flac, or an extension), -d the data
            format in afconvert's notation (LEI16@44100, BEF32@48000x2, aac@44100, alac,
            mp3, opus, flac); what -d leaves out (rate, channels) is kept from the input.
            Compressed formats are encoded through libavcodec (AAC; MP3 through LAME; Opus
            through libopus; ALAC, FLAC) with -b bits per second and -q quality (0–127);
            their encoder delay goes into the file's packet table, so the output decodes
            sample-aligned with the input. Rate changes go through libsoxr. The output
            appears only when complete; on failure nothing is left behind.

            Examples:
              sonora convert in.aiff out.caf -f caff -d LEI16@44100
              sonora convert take.wav take.flac
              sonora convert take.wav take.m4a -d aac@44100 -b 128000
              sonora convert take.wav take.caf -d alac
              sonora convert --json voice.wav voice.opus -d opus@48000 -b 32000
              sonora convert --json voice.wav voice-16k.wav -d LEI16@16000x1
            """
    )

    @Argument(help: "The input file.")
    var input: String

    @Argument(help: "The output file.")
    var output: String

    @Option(name: .customShort("f"), help: "Output file type (caff, WAVE, AIFF, AIFC, flac, RF64, or an extension).")
    var fileType: String?

    @Option(name: .customShort("d"), help: "Output data format, afconvert style (LEI16@44100, BEF32@48000x2, flac).")
    var dataFormat: String?

    @Option(name: .customShort("b"), help: "Bit rate of a compressed output, in bits per second (AAC, MP3, Opus).")
    var bitRate: Int?

    @Option(name: .customShort("q"), help: "Encoder quality, 0 (fastest) to 127 (best), as afconvert's -q.")
    var quality: Int?

    @Flag(help: "Replace the output file if it exists.")
    var overwrite = false

    @Flag(help: "Print the result as JSON.")
    var json = false

    struct Result: Codable {
        var input: String
        var output: String
        var type: String
        var format: String
        var frames: Int
        var bitRate: Int?
        var primingFrames: Int?
        var remainderFrames: Int?
    }

    func validate() throws {
        if let bitRate, bitRate <= 0 || bitRate > 10_000_000 { throw ValidationError("-b must be a bit rate in bits per second (1…10000000), not \(bitRate)") }
        if let quality, !(0...127).contains(quality) { throw ValidationError("-q must be 0…127, not \(quality)") }
    }

    func run() throws {
        do {
            try convert()
        } catch let error as AudioError {
            throw CLIError("\(error)")
        }
    }

    private func convert() throws {
        try OutputFile.check(output, inputs: [input], overwrite: overwrite)
        let source = try ExtAudioFile.open(input)
        let inputFormat = source.file.dataFormat
        let type = try outputType()
        var format = try outputFormat(from: inputFormat, type: type)
        if format.sampleRate == 0 { format.sampleRate = inputFormat.sampleRate }
        let channels = Int(format.channelsPerFrame)
        let client = StreamFormat.canonical(sampleRate: format.sampleRate, channels: channels)
        try source.setClientFormat(client)
        if (bitRate != nil || quality != nil) && (format.isLinearPCM || format.formatID == .appleIMA4) {
            throw AudioError(.unsupportedDataFormat, "-b and -q apply to compressed formats; \(format) is not one")
        }
        let destination = try ExtAudioFile.create(
            output, type: type, format: format, encoder: EncoderSettings(bitRate: bitRate, quality: quality), erase: overwrite)
        try destination.setClientFormat(client)

        let block = 4096
        let pcm = try OwnedPCMBufferList(format: client, frameCapacity: block)
        var frames = 0
        do {
            while true {
                let read = try source.read(into: pcm.list(frameCount: block), frameCount: block)
                if read == 0 { break }
                try destination.write(from: pcm.list(frameCount: read), frameCount: read)
                frames += read
            }
            try destination.close()
        } catch {
            destination.file.abandon()
            throw error
        }
        let written = try? AudioFile.open(output)
        let table = written?.packetTableInfo
        let result = Result(
            input: input, output: output, type: type.rawValue.characters ?? type.description, format: format.description,
            frames: frames, bitRate: format.isLinearPCM ? nil : written?.bitRate,
            primingFrames: table.map { Int($0.primingFrames) }, remainderFrames: table.map { Int($0.remainderFrames) })
        if json { return try printJSON(result) }
        var line = "\(input) → \(output): \(result.type) \(result.format), \(frames) frames"
        if let bitRate = result.bitRate { line += ", \(bitRate / 1000) kbit/s" }
        if let priming = result.primingFrames { line += ", priming \(priming), remainder \(result.remainderFrames ?? 0)" }
        print(line)
    }

    private func outputType() throws -> AudioFileType {
        if let fileType {
            if let code = FourCharCode(characters: fileType.padding(toLength: 4, withPad: " ", startingAt: 0)),
                [AudioFileType.wave, .aiff, .aifc, .caf, .flac, .rf64, .ogg, .m4a, .mp4, .adts, .mp3].contains(AudioFileType(rawValue: code))
            {
                return AudioFileType(rawValue: code)
            }
            if let type = AudioFileType(pathExtension: fileType) { return type }
            throw AudioError(.unsupportedFileType, "unknown file type '\(fileType)' (use caff, WAVE, AIFF, AIFC, m4af, mp4f, adts, MPG3, flac, RF64, OggS or an extension)")
        }
        guard let type = AudioFileType(pathExtension: (output as NSString).pathExtension) else {
            throw AudioError(.unsupportedFileType, "\(output): cannot tell the file type from the extension; give -f")
        }
        return type
    }

    private func outputFormat(from input: StreamFormat, type: AudioFileType) throws -> StreamFormat {
        guard let dataFormat else {
            // Keep the input's PCM format where the container takes it; 16-bit otherwise.
            let channels = Int(input.channelsPerFrame)
            // Containers that hold one kind of compressed data get it (afconvert's defaults).
            switch type {
            case .flac: return .compressed(.flac, sampleRate: input.sampleRate, channels: channels)
            case .m4a, .mp4, .adts: return .compressed(.mpeg4AAC, sampleRate: input.sampleRate, channels: channels)
            case .mp3: return .compressed(.mpegLayer3, sampleRate: input.sampleRate, channels: channels)
            case .ogg where (output as NSString).pathExtension.lowercased() == "opus":
                return .compressed(.opus, sampleRate: 48000, channels: channels)
            default: break
            }
            if input.isLinearPCM { return input }
            return .linearPCM(sampleRate: input.sampleRate, channels: Int(input.channelsPerFrame), sample: .int16, bigEndian: type == .aiff)
        }
        var format = try StreamFormat(parsing: dataFormat)
        if !dataFormat.contains("x") {
            // No channel count given: keep the input's.
            let channels = Int(input.channelsPerFrame)
            format = format.isLinearPCM
                ? .linearPCM(sampleRate: format.sampleRate, channels: channels, sample: format.pcmSample ?? .int16,
                             interleaved: true, bigEndian: format.isBigEndian)
                : .compressed(format.formatID, sampleRate: format.sampleRate, channels: channels)
        }
        return format
    }
}
