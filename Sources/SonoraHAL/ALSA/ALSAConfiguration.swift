import CALSA
import CSonoraALSA
import Logging
import SonoraCore
import Synchronization

/// The ALSA configuration tree Sonora opens PCMs with: the system's (alsa.conf and what
/// it includes), plus Sonora's own definitions — the `sonoraloop` loopback plugin — so
/// `sonoraloop` and `sonoraloop:NAME` open with no set-up by the user and nothing
/// system-wide changed.
public enum ALSAConfiguration {
    /// The file name of Sonora's loopback plugin (a SwiftPM product beside the binaries).
    public static let loopPluginFileName = "libasound_module_pcm_sonoraloop.so"

    /// Where the loopback plugin is: `$SONORA_LOOP_PLUGIN`, else beside the running
    /// executable (the `sonora` binary, or the test bundle in the same build folder).
    public static var loopPluginPath: String? {
        if let path = getenv("SONORA_LOOP_PLUGIN").map({ String(cString: $0) }), access(path, R_OK) == 0 { return path }
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let executable = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var directory = executable
        while let slash = directory.lastIndex(of: "/") {
            directory = String(directory[..<slash])
            let candidate = directory + "/" + loopPluginFileName
            if access(candidate, R_OK) == 0 { return candidate }
            // The test bundle can sit one level deeper than the products.
            if directory.hasSuffix("/.build") || directory.isEmpty { break }
        }
        // Installed (the Debian package): alsa-lib's plugin folder beside /usr/bin.
        let executableFolder = executable[..<(executable.lastIndex(of: "/") ?? executable.startIndex)]
        let installed = "\(executableFolder)/../lib/\(multiarchTriple)/alsa-lib/\(loopPluginFileName)"
        return access(installed, R_OK) == 0 ? installed : nil
    }

    /// Debian's multiarch folder name for this machine's libraries.
    private static var multiarchTriple: String {
        #if arch(x86_64)
            "x86_64-linux-gnu"
        #elseif arch(arm64)
            "aarch64-linux-gnu"
        #else
            "unknown"
        #endif
    }

    /// A JACK loop through libasound2-plugins' `jack` PCM: the playback client's outputs
    /// are connected to the capture client's inputs (stereo), so capture hears playback.
    /// Debian's plugin connects when a PCM is prepared, so the capture (whose ports the
    /// playback connects to) must be opened first — as Sonora does.
    public static let jackLoopDefinitions = """
        pcm.sonora_jackloop_capture {
            type jack
            name "sonora-loop-c"
            capture_ports { 0 0 1 0 }
        }
        pcm.sonora_jackloop_playback {
            type jack
            name "sonora-loop-p"
            playback_ports { 0 "sonora-loop-c:in_000" 1 "sonora-loop-c:in_001" }
        }
        """

    /// Sonora's definitions in ALSA's configuration syntax.
    public static func sonoraDefinitions(pluginPath: String) -> String {
        """
        pcm_type.sonoraloop { lib "\(pluginPath)" }
        pcm.sonoraloop {
            @args [ LOOP ]
            @args.LOOP { type string default "default" }
            type sonoraloop
            loop $LOOP
            hint { show on description "Sonora timer-paced loopback (playback is heard by capture)" }
        }
        """
    }

    /// alsa-lib's own error lines ("cannot find card '0'" …) and libjack's (loaded by
    /// the ALSA `jack` plugin: "Cannot connect to server socket…", "jack server is not
    /// running…") go to Sonora's log at debug level instead of stderr: Sonora reports
    /// the failure itself, in one line. `showLibraryMessages(true)` prints them again.
    static let routeErrors: Void = {
        sonora_alsa_route_errors { message in
            guard let message else { return }
            libraryMessage("alsa-lib", String(cString: message))
        }
        routeJackMessages(loading: false)
    }()

    static let alsaLogger = Logger(label: "sonora.alsa-lib")
    private static let showsLibraryMessages = Atomic<Bool>(false)

    /// Shows alsa-lib's and libjack's own messages on stderr (`--verbose`) instead of
    /// logging them at debug level.
    public static func showLibraryMessages(_ shown: Bool) {
        showsLibraryMessages.store(shown, ordering: .relaxed)
    }

    private static func libraryMessage(_ library: String, _ text: String) {
        if showsLibraryMessages.load(ordering: .relaxed) {
            let line = "\(library): \(text)\n"
            _ = line.withCString { write(2, $0, strlen($0)) }
        } else {
            alsaLogger.debug("\(library): \(text)")
        }
    }

    /// libjack prints through two handlers that are plain C function pointers
    /// (`jack_set_error_function`, `jack_set_info_function`). Sonora does not link JACK:
    /// it opens the library ALSA's jack plugin or the JACK driver loads (same soname, so the
    /// same instance) and sets them. Without `loading`, only when the library is already in
    /// the process (`RTLD_NOLOAD`): mapping libjack and libdb for every ALSA device would
    /// cost a pipeline that never uses JACK their resident memory (issue 21's footprint).
    static func routeJackMessages(loading: Bool) {
        let flags = RTLD_LAZY | RTLD_LOCAL | (loading ? 0 : RTLD_NOLOAD)
        guard let library = dlopen("libjack.so.0", flags) else { return }
        typealias Handler = @convention(c) (UnsafePointer<CChar>?) -> Void
        typealias Setter = @convention(c) (Handler) -> Void
        let handler: Handler = { message in
            guard let message else { return }
            ALSAConfiguration.libraryMessage("libjack", String(cString: message))
        }
        for name in ["jack_set_error_function", "jack_set_info_function"] {
            if let symbol = dlsym(library, name) { unsafeBitCast(symbol, to: Setter.self)(handler) }
        }
    }

    /// Before `name` is opened: when `tree` makes it a `type jack` PCM, loads libjack and
    /// routes its messages first (the plugin loads the library inside `snd_pcm_open` and
    /// prints through it there, "jack server is not running …").
    static func prepareToOpen(_ name: String, tree: OpaquePointer) {
        let base = name.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? name
        guard !base.isEmpty, !base.contains("."), !base.contains("\"") else { return }
        var node: OpaquePointer?
        guard snd_config_search(tree, "pcm.\(base).type", &node) >= 0, let node else { return }
        var type: UnsafePointer<CChar>?
        guard snd_config_get_string(node, &type) >= 0, let type, String(cString: type) == "jack" else { return }
        routeJackMessages(loading: true)
    }

    /// True when ALSA's configuration (with Sonora's definitions and `extra`) defines a
    /// PCM called `name` — its part before the first ':' — without opening anything.
    public static func definesPCM(_ name: String, extra: String = "") throws(AudioError) -> Bool {
        let tree = try tree(extra: extra)
        defer { snd_config_delete(tree) }
        let base = name.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? name
        var pcms: OpaquePointer?
        guard snd_config_search(tree, "pcm", &pcms) >= 0, let pcms else { return false }
        var node: OpaquePointer?
        return snd_config_search(pcms, base, &node) >= 0
    }

    /// A private copy of the global configuration with Sonora's definitions and
    /// `extra` (ALSA configuration text, e.g. a test's PCMs) merged in. The caller owns it
    /// (`snd_config_delete`).
    public static func tree(extra: String = "") throws(AudioError) -> OpaquePointer {
        routeErrors
        var global: OpaquePointer?
        var status = snd_config_update_ref(&global)
        guard status >= 0, let global else { throw alsaError(.hardwareUnspecified, status, "cannot read ALSA's configuration") }
        defer { snd_config_unref(global) }
        var copy: OpaquePointer?
        status = snd_config_copy(&copy, global)
        guard status >= 0, let copy else { throw alsaError(.hardwareUnspecified, status, "cannot copy ALSA's configuration") }
        var text = jackLoopDefinitions + "\n" + extra
        if let path = loopPluginPath { text = sonoraDefinitions(pluginPath: path) + "\n" + text }
        var input: OpaquePointer?
        status = text.withCString { snd_input_buffer_open(&input, $0, -1) }
        guard status >= 0, let input else {
            snd_config_delete(copy)
            throw alsaError(.hardwareUnspecified, status, "cannot read Sonora's ALSA definitions")
        }
        defer { snd_input_close(input) }
        status = snd_config_load(copy, input)
        guard status >= 0 else {
            snd_config_delete(copy)
            throw alsaError(.parameterError, status, "ALSA configuration text does not parse")
        }
        return copy
    }
}

/// An `AudioError` carrying ALSA's own words for a negative status.
func alsaError(_ code: AudioError.Code, _ status: Int32, _ what: String) -> AudioError {
    AudioError(code, "\(what): \(String(cString: snd_strerror(status)))")
}

#if canImport(Glibc)
import Glibc
#endif
