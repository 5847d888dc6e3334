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
            such as caff, WAVE, AIFF, flac, or an extension), -d the data format in
            afconvert's notation (LEI16@44100, BEF32@48000x2, flac); what -d leaves out
            (rate, channels) is kept from the input. Rate changes go through libsoxr. The
            output appears only when complete; on failure nothing is left behind.

            Examples:
              sonora convert in.aiff out.caf -f caff -d LEI16@44100
              sonora convert take.wav take.flac
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
        let destination = try AudioFile.create(output, type: type, format: format, erase: overwrite)

        let block = 4096
        let pcm = try OwnedPCMBufferList(format: client, frameCapacity: block)
        let pointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
        defer { pointers.deallocate() }
        for channel in 0..<channels { pointers[channel] = pcm.bytes(channel).baseAddress!.assumingMemoryBound(to: Float.self) }
        var frames = 0
        do {
            while true {
                let read = try source.read(into: pcm.list(frameCount: block), frameCount: block)
                if read == 0 { break }
                try destination.writeFrames(from: AudioBufferList(channels: pointers, channelCount: channels, frameCount: read))
                frames += read
            }
            try destination.close()
        } catch {
            try? destination.close()
            throw error
        }
        let result = Result(
            input: input, output: output, type: type.rawValue.characters ?? type.description, format: format.description,
            frames: frames)
        if json { return try printJSON(result) }
        print("\(input) → \(output): \(result.type) \(result.format), \(frames) frames")
    }

    private func outputType() throws -> AudioFileType {
        if let fileType {
            if let code = FourCharCode(characters: fileType.padding(toLength: 4, withPad: " ", startingAt: 0)),
                [AudioFileType.wave, .aiff, .aifc, .caf, .flac, .rf64, .ogg].contains(AudioFileType(rawValue: code))
            {
                return AudioFileType(rawValue: code)
            }
            if let type = AudioFileType(pathExtension: fileType) { return type }
            throw AudioError(.unsupportedFileType, "unknown file type '\(fileType)' (use caff, WAVE, AIFF, AIFC, flac, RF64 or an extension)")
        }
        guard let type = AudioFileType(pathExtension: (output as NSString).pathExtension) else {
            throw AudioError(.unsupportedFileType, "\(output): cannot tell the file type from the extension; give -f")
        }
        return type
    }

    private func outputFormat(from input: StreamFormat, type: AudioFileType) throws -> StreamFormat {
        guard let dataFormat else {
            // Keep the input's PCM format where the container takes it; 16-bit otherwise.
            if type == .flac { return .compressed(.flac, sampleRate: input.sampleRate, channels: Int(input.channelsPerFrame)) }
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
