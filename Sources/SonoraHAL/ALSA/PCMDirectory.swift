import CALSA
import SonoraCore

#if canImport(Glibc)
import Glibc
#endif

/// A PCM ALSA knows by name (`snd_device_name_hint`), or one of Sonora's own devices.
public struct PCMHint: Hashable, Sendable, Codable {
    public var name: String
    public var description: String
    public var canCapture: Bool
    public var canPlay: Bool
    /// "alsa" for PCMs ALSA lists, "sonora" for Sonora's own devices.
    public var source: String
}

/// What one direction of a PCM grants: ranges from its hardware parameter space.
public struct PCMCapabilities: Hashable, Sendable, Codable {
    public var direction: String
    public var formats: [String]
    public var accesses: [String]
    public var rates: ClosedRange<Int>
    public var channels: ClosedRange<Int>
    public var periodFrames: ClosedRange<Int>
    public var periods: ClosedRange<Int>
    public var bufferFrames: ClosedRange<Int>
}

/// Enumerates and probes PCMs.
public enum PCMDirectory {
    /// Sonora's devices that need no sound card, listed first.
    public static var sonoraDevices: [PCMHint] {
        var devices = [
            PCMHint(name: "null", description: "Sonora's timer-paced device: no sound card needed (captures silence)", canCapture: true, canPlay: true, source: "sonora"),
            PCMHint(name: "offline", description: "Sonora's unpaced device: renders as fast as the graph runs", canCapture: true, canPlay: true, source: "sonora"),
            PCMHint(name: "inprocess:FRAMES", description: "Sonora's in-process loopback: capture hears playback FRAMES later", canCapture: true, canPlay: true, source: "sonora"),
        ]
        if ALSAConfiguration.loopPluginPath != nil {
            devices.append(PCMHint(name: "sonoraloop:NAME", description: "Sonora's timer-paced ALSA loopback plugin: capture hears playback on loop NAME one buffer later", canCapture: true, canPlay: true, source: "sonora"))
        }
        // The appliance, when one serves (at SONORA_SERVER or the default path).
        if isApplianceRunning() {
            devices.append(PCMHint(name: "sonora", description: "the Sonora appliance at \(ApplianceSocket.clientPath()): plays and records through it, under its session policy", canCapture: true, canPlay: true, source: "sonora"))
        }
        return devices
    }

    /// Every PCM `snd_device_name_hint` knows.
    public static func alsaHints() -> [PCMHint] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard snd_device_name_hint(-1, "pcm", &hints) >= 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        var result: [PCMHint] = []
        var index = 0
        while let hint = hints[index] {
            index += 1
            func field(_ id: String) -> String? {
                guard let value = snd_device_name_get_hint(hint, id) else { return nil }
                defer { free(value) }
                return String(cString: value)
            }
            guard let name = field("NAME") else { continue }
            let io = field("IOID")
            let description = (field("DESC") ?? "").split(separator: "\n").joined(separator: " — ")
            result.append(PCMHint(name: name, description: description, canCapture: io == nil || io == "Input", canPlay: io == nil || io == "Output", source: "alsa"))
        }
        return result
    }

    /// Opens `name` for `direction` (non-blocking) and reads what it grants; `faults`
    /// lets a test make the open or the configuration space fail.
    public static func probe(_ name: String, capture: Bool, faults: PCMFaults = PCMFaults()) throws(AudioError) -> PCMCapabilities {
        let tree = try ALSAConfiguration.tree()
        defer { snd_config_delete(tree) }
        var pcm: OpaquePointer?
        let direction = capture ? SND_PCM_STREAM_CAPTURE : SND_PCM_STREAM_PLAYBACK
        let on = "\(capture ? "capture" : "playback") PCM '\(name)'"
        var status = faults.failure(.open)
        if status == 0 {
            ALSAConfiguration.prepareToOpen(name, tree: tree)
            status = snd_pcm_open_lconf(&pcm, name, direction, SND_PCM_NONBLOCK, tree)
        }
        guard status >= 0, let pcm else { throw alsaError(.badDevice, status, "cannot open \(on) (snd_pcm_open)") }
        defer { snd_pcm_close(pcm) }
        var params: OpaquePointer?
        snd_pcm_hw_params_malloc(&params)
        guard let params else { throw AudioError(.memoryFull, "cannot allocate hardware parameters") }
        defer { snd_pcm_hw_params_free(params) }
        status = faults.failure(.hardwareSpace)
        if status == 0 { status = snd_pcm_hw_params_any(pcm, params) }
        guard status >= 0 else { throw alsaError(.badDevice, status, "\(on): no hardware configuration (snd_pcm_hw_params_any)") }
        var low: UInt32 = 0, high: UInt32 = 0
        var lowFrames: snd_pcm_uframes_t = 0, highFrames: snd_pcm_uframes_t = 0
        snd_pcm_hw_params_get_rate_min(params, &low, nil)
        snd_pcm_hw_params_get_rate_max(params, &high, nil)
        let rates = Int(low)...Int(max(low, high))
        snd_pcm_hw_params_get_channels_min(params, &low)
        snd_pcm_hw_params_get_channels_max(params, &high)
        let channels = Int(low)...Int(max(low, high))
        snd_pcm_hw_params_get_period_size_min(params, &lowFrames, nil)
        snd_pcm_hw_params_get_period_size_max(params, &highFrames, nil)
        let periodFrames = Int(lowFrames)...Int(max(lowFrames, highFrames))
        snd_pcm_hw_params_get_periods_min(params, &low, nil)
        snd_pcm_hw_params_get_periods_max(params, &high, nil)
        let periods = Int(low)...Int(max(low, high))
        snd_pcm_hw_params_get_buffer_size_min(params, &lowFrames)
        snd_pcm_hw_params_get_buffer_size_max(params, &highFrames)
        let bufferFrames = Int(lowFrames)...Int(max(lowFrames, highFrames))
        let accesses = DeviceAccess.allCases.filter { snd_pcm_hw_params_test_access(pcm, params, $0.alsaAccess) == 0 }.map(\.rawValue)
        return PCMCapabilities(
            direction: capture ? "capture" : "playback", formats: PCMNegotiation.offeredFormats(pcm, params), accesses: accesses,
            rates: rates, channels: channels, periodFrames: periodFrames, periods: periods, bufferFrames: bufferFrames)
    }
}
