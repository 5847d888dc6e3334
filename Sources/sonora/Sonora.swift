import ArgumentParser
import SonoraPipeline

@main
struct Sonora: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sonora",
        abstract: "Sonora: a realtime audio runtime for Linux — Core Audio's model on ALSA and LV2.",
        discussion: """
            Examples:
              sonora units                 # the audio units Sonora can create
              sonora info take.wav         # an audio file's type, format, length
              sonora play take.wav         # play files through an audio queue
              sonora sound --alert bell.caf   # a system sound, now (and the alert action)
              sonora convert in.aiff out.caf -f caff -d LEI16@44100
              sonora devices --probe       # audio devices and what they grant
              sonora latency --device sonoraloop   # round-trip latency on the loopback
              sonora plugins reverb        # installed LV2 plugins matching "reverb"
              sonora voice process --rate 16000 mic.raw ref.raw out.raw   # echo cancellation

            Benchmarks are a separate program: sonora-bench --help
            """,
        version: SonoraVersion.string,
        subcommands: [RunCommand.self, RenderCommand.self, CheckCommand.self, SchemaCommand.self, CtlCommand.self, UnitsCommand.self, InfoCommand.self, ConvertCommand.self, DevicesCommand.self, LatencyCommand.self, PluginsCommand.self, VoiceCommand.self, PlayCommand.self, RecordCommand.self, SoundCommand.self, SessionCommand.self]
    )
}

enum SonoraVersion {
    // One version string: the library's (the control protocol's `version` answer reports it too).
    static let string = ControlProtocol.sonoraVersion
}
