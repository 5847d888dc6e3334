import SonoraCore

/// Which device to open, by driver — the one parsed form of every device name Sonora
/// accepts (CLI options, a pipeline's `device:` section, the I/O unit's CurrentDevice).
///
/// Names:
/// - `null`: the timer-paced device (captures silence, discards playback);
/// - `offline`: unpaced, as fast as the procedure runs;
/// - `inprocess[:FRAMES]`: the in-process loopback, capture hearing playback FRAMES
///   later (default one buffer, periods × period);
/// - `sonoraloop[:NAME]`: Sonora's ALSA loopback plugin (a real ALSA PCM);
/// - `jackloop`: a JACK loop through libasound2-plugins' `jack` PCM (a running server);
/// - `sonora[:PATH]`: a running Sonora appliance, through its server socket (PATH, else
///   `SONORA_SERVER`, else `ApplianceSocket.defaultPath`);
/// - `alsa:PCM`: the ALSA PCM called PCM even where the name means something else here
///   (`alsa:null` is ALSA's own null PCM);
/// - anything else: an ALSA PCM name (`hw:0`, `plughw:1,0`, `default`, …).
public enum DeviceSpecifier: Hashable, Sendable {
    /// ALSA PCMs by name; nil for a direction the device does not use.
    case alsa(capture: String?, playback: String?)
    /// Timer-paced on CLOCK_MONOTONIC; captures silence, discards playback.
    case null
    /// As fast as the procedure runs; captures silence, discards playback.
    case offline
    /// In process: capture hears playback exactly `latencyFrames` later (nil: one
    /// buffer); paced by the timer like `null`, or unpaced.
    case inProcess(latencyFrames: Int?, paced: Bool)
    /// A running Sonora appliance, through its server socket (nil: `SONORA_SERVER`, else
    /// `ApplianceSocket.defaultPath`).
    case appliance(socketPath: String?)
    /// netjack2 over the network (libjacknet), as slave or master (`netjack:…`).
    case netJack(NetJackDeviceName)
    /// Sonora as a JACK client (`jack[:PEER][@SERVER]`, see `JACKDeviceName`).
    case jack(JACKDeviceName)

    @available(*, deprecated, renamed: "inProcess(latencyFrames:paced:)", message: "the in-process loopback is `inprocess`; `sonoraloop` is the ALSA loopback plugin")
    public static func loopback(latencyFrames: Int, paced: Bool) -> DeviceSpecifier { .inProcess(latencyFrames: latencyFrames, paced: paced) }

    /// The PCMs of the `jackloop` name (defined in `ALSAConfiguration.jackLoopDefinitions`).
    static let jackLoopCapture = "sonora_jackloop_capture"
    static let jackLoopPlayback = "sonora_jackloop_playback"

    /// Parses one device name for both directions. Opens nothing: a config check can
    /// call it to report a bad name where it stands. Throws `AudioError(.badDevice)`
    /// with a message that names the name and what would be right.
    public init(parsing text: String) throws(AudioError) {
        let shown = Self.excerpt(text)
        guard !text.isEmpty else { throw AudioError(.badDevice, "empty device name; use `null`, `offline`, `inprocess[:FRAMES]`, `sonoraloop[:NAME]`, `sonora[:PATH]` or an ALSA PCM name") }
        if let bad = text.unicodeScalars.first(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == " " }) {
            throw AudioError(.badDevice, "device name '\(shown)' contains \(bad == " " ? "a space" : "a control character (U+\(String(bad.value, radix: 16, uppercase: true)))"); ALSA PCM names have none")
        }
        guard text.utf8.count <= 256 else { throw AudioError(.badDevice, "device name '\(shown)' is longer than 256 bytes") }
        let (head, argument) = Self.split(text)
        switch head {
        case "null", "~":
            try Self.noArgument(argument, text, "null")
            self = .null
        case "offline":
            try Self.noArgument(argument, text, "offline")
            self = .offline
        case "none":
            throw AudioError(.badDevice, "'none' is no device: leave that direction out instead")
        case "loopback":
            throw AudioError(
                .badDevice,
                "'\(shown)' is no longer a device name (it meant two things): use `sonoraloop[:NAME]` for Sonora's ALSA loopback plugin or `inprocess[:FRAMES]` for the in-process loopback")
        case "inprocess":
            guard let argument else {
                self = .inProcess(latencyFrames: nil, paced: true)
                return
            }
            guard let frames = Int(argument), frames > 0, frames <= 1 << 22 else {
                throw AudioError(.badDevice, "'\(shown)': the in-process loopback's latency must be a whole number of frames, 1…4194304 (inprocess:FRAMES)")
            }
            self = .inProcess(latencyFrames: frames, paced: true)
        case "sonoraloop":
            if let argument {
                guard !argument.isEmpty, argument.utf8.allSatisfy({ Self.isLoopNameByte($0) }) else {
                    throw AudioError(.badDevice, "'\(shown)': a sonoraloop loop name is letters, digits, '.', '_' and '-' (sonoraloop:NAME)")
                }
            }
            self = .alsa(capture: text, playback: text)
        case "sonora":
            guard let argument else {
                self = .appliance(socketPath: nil)
                return
            }
            guard argument.hasPrefix("/"), argument.utf8.count < 108 else {
                throw AudioError(.badDevice, "'\(shown)': the appliance's socket must be an absolute path shorter than 108 bytes (sonora:/PATH/server.sock)")
            }
            self = .appliance(socketPath: argument)
        case "jackloop":
            try Self.noArgument(argument, text, "jackloop")
            self = .alsa(capture: Self.jackLoopCapture, playback: Self.jackLoopPlayback)
        case "netjack": self = .netJack(try NetJackDeviceName.parse(argument ?? ""))
        case "jack": self = .jack(try JACKDeviceName.parse(argument))
        case "alsa":
            guard let argument, !argument.isEmpty else { throw AudioError(.badDevice, "'\(shown)': name the ALSA PCM after `alsa:` (alsa:PCM)") }
            self = .alsa(capture: argument, playback: argument)
        default:
            guard !text.hasPrefix("-") else { throw AudioError(.badDevice, "device name '\(shown)' starts with '-'") }
            self = .alsa(capture: text, playback: text)
        }
    }

    /// Combines a name per direction, as a pipeline's `device:` section gives them (nil:
    /// that direction is not used). ALSA names may differ per direction; `null` beside an
    /// ALSA PCM leaves that direction unused; Sonora's other devices serve both
    /// directions and must be named alike.
    public init(capture: String?, playback: String?) throws(AudioError) {
        let parsedCapture = try capture.map { text throws(AudioError) in try DeviceSpecifier(parsing: text) }
        let parsedPlayback = try playback.map { text throws(AudioError) in try DeviceSpecifier(parsing: text) }
        switch (parsedCapture, parsedPlayback) {
        case (nil, nil):
            self = .null
        case (.alsa(let pcm, _)?, nil):
            self = .alsa(capture: pcm, playback: nil)
        case (nil, .alsa(_, let pcm)?):
            self = .alsa(capture: nil, playback: pcm)
        case (let one?, nil), (nil, let one?):
            self = one
        case (.alsa(let input, _)?, .alsa(_, let output)?):
            self = .alsa(capture: input, playback: output)
        case (.alsa(let input, _)?, .null?):
            self = .alsa(capture: input, playback: nil)
        case (.null?, .alsa(_, let output)?):
            self = .alsa(capture: nil, playback: output)
        case (let input?, let output?):
            guard input == output else {
                throw AudioError(
                    .badDevice,
                    "capture '\(Self.excerpt(capture!))' and playback '\(Self.excerpt(playback!))' cannot be combined: Sonora's own devices serve both directions; name the same one for both (or an ALSA PCM for each)")
            }
            self = input
        }
    }

    /// The driver that opens it: "alsa", "null", "offline", "inprocess" or "sonora".
    public var driver: String {
        switch self {
        case .alsa: "alsa"
        case .null: "null"
        case .offline: "offline"
        case .inProcess: "inprocess"
        case .appliance: "sonora"
        case .netJack: "netjack"
        case .jack: "jack"
        }
    }

    /// The specifier as a name `init(parsing:)` reads back (for an ALSA pair with
    /// different names, playback's).
    public var name: String {
        switch self {
        case .alsa(let capture, let playback):
            if capture == Self.jackLoopCapture && playback == Self.jackLoopPlayback { return "jackloop" }
            let pcm = playback ?? capture ?? ""
            return Self.isReserved(pcm) ? "alsa:\(pcm)" : pcm
        case .null: return "null"
        case .offline: return "offline"
        case .inProcess(let frames, _): return frames.map { "inprocess:\($0)" } ?? "inprocess"
        case .appliance(let path): return path.map { "sonora:\($0)" } ?? "sonora"
        case .netJack(let name): return "netjack:\(name.text)"
        case .jack(let name): return name.deviceName
        }
    }

    /// True when `pcm`, as an ALSA PCM name, is spelled `alsa:PCM` (its bare spelling
    /// means one of Sonora's devices or is refused).
    public static func isReserved(_ pcm: String) -> Bool {
        let head = split(pcm).head
        return ["null", "~", "offline", "none", "loopback", "inprocess", "jackloop", "alsa", "sonora", "netjack", "jack"].contains(head)
    }

    private static func split(_ text: String) -> (head: String, argument: String?) {
        guard let colon = text.firstIndex(of: ":") else { return (text, nil) }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }

    private static func noArgument(_ argument: String?, _ text: String, _ name: String) throws(AudioError) {
        if argument != nil { throw AudioError(.badDevice, "'\(excerpt(text))': `\(name)` takes no argument") }
    }

    private static func isLoopNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"): true
        default: false
        }
    }

    /// At most 40 characters of a user's text, control characters escaped.
    static func excerpt(_ text: String) -> String {
        var shown = ""
        for scalar in text.unicodeScalars.prefix(40) {
            shown += scalar.value < 0x20 || scalar.value == 0x7F ? scalar.escaped(asASCII: true) : String(scalar)
        }
        return text.unicodeScalars.count > 40 ? shown + "…" : shown
    }
}

extension DeviceSpecifier {
    /// Checks, without opening anything, that ALSA's configuration defines the PCMs this
    /// names (and that Sonora's loopback plugin is there for `sonoraloop`), so a config
    /// check can refuse what opening would. Sonora's own devices always pass.
    public func checkDefined(alsaConfiguration: String = "") throws(AudioError) {
        if case .jack(let name) = self { return try name.checkServer() }
        guard case .alsa(let capture, let playback) = self else { return }
        for pcm in Set([capture, playback].compactMap { $0 }).sorted() {
            if pcm.hasPrefix("sonoraloop") && ALSAConfiguration.loopPluginPath == nil {
                throw AudioError(.badDevice, "'\(Self.excerpt(pcm))' needs Sonora's loopback plugin (\(ALSAConfiguration.loopPluginFileName)), which is not beside the binary; build it (swift build --product asound_module_pcm_sonoraloop) or point SONORA_LOOP_PLUGIN at it")
            }
            guard try ALSAConfiguration.definesPCM(pcm, extra: alsaConfiguration) else {
                throw AudioError(.badDevice, "no ALSA PCM called '\(Self.excerpt(pcm))' (`sonora devices` lists the PCMs ALSA knows)")
            }
        }
    }
}
