import SonoraCore
import SonoraUnits
import SonoraVoice

/// The reserved node `voice`: the voice-processing I/O unit that heads a live pipeline
/// whose config says `device: {…, voice_processing: on}`. It is not a graph node of the
/// config (it *is* the device side of `output` and `input`), but the control socket
/// reaches its parameters and meters like any node's.
public enum VoiceProcessingNode {
    public static let id = "voice"
    /// The kind `nodes` reports for it.
    public static let kind = "voice_processing"

    static let reservedMessage = "node id 'voice' is reserved for the device's voice processing (`device: {voice_processing: on}`; the control socket reaches it as `voice`)"

    /// Its meters under stable names (the metrics exporter and scripts read these), each
    /// the voice-processing parameter that holds it.
    public static let meters: [(name: String, parameter: AudioUnitParameterID)] = [
        ("erle_db", VoiceProcessingParameter.erle),
        ("delay_ms", VoiceProcessingParameter.estimatedDelayMilliseconds),
        ("double_talk", VoiceProcessingParameter.doubleTalk),
        ("drift_ppm", VoiceProcessingParameter.driftPPM),
        ("echo_path_changes", VoiceProcessingParameter.echoPathChanges),
    ]

    /// The head unit of a live pipeline with voice processing on; the canceller starts from
    /// its default settings (its parameters are set over the socket, `set voice …`).
    static func makeUnit() -> VoiceProcessingIOUnit { VoiceProcessingIOUnit() }
}

extension BuiltPipeline {
    /// The `voice` node when the pipeline runs on a device through the voice-processing I/O unit.
    public var voiceNode: PipelineNode? {
        guard let io = io as? VoiceProcessingIOUnit else { return nil }
        return PipelineNode(id: VoiceProcessingNode.id, kind: VoiceProcessingNode.kind, node: headNode, unit: io)
    }

    /// The nodes the control socket addresses: the config's, then `voice` when there is one.
    public var controlNodes: [PipelineNode] { nodes + (voiceNode.map { [$0] } ?? []) }

    /// A node the control socket addresses, by id.
    public func controlNode(_ id: String) -> PipelineNode? {
        id == VoiceProcessingNode.id ? voiceNode : node(id)
    }

    /// The `voice` node's meters under their stable names.
    func voiceMeters() -> [ControlResponse.MeterReading] {
        guard let voice = voiceNode else { return [] }
        let definitions = voice.unit.parameterDefinitions
        return VoiceProcessingNode.meters.compactMap { meter in
            guard let definition = definitions.first(where: { $0.id == meter.parameter }),
                  let value = try? voice.unit.parameter(meter.parameter)
            else { return nil }
            return .init(node: voice.id, meter: meter.name, scope: definition.scope.description, element: 0,
                         value: Double(value), unit: definition.info.unit.symbol)
        }
    }
}

extension VoiceProcessingNode {
    /// Why a connection cannot name `voice`.
    static func connectionMessage(voiceProcessing: Bool) -> String {
        voiceProcessing
            ? "`voice` is the device's voice processing, not a graph node: it sits between `output`/`input` and the device; connect to `output` and from `input`"
            : "no node 'voice' (`voice` is reserved for the device's voice processing: `device: {voice_processing: on}`)"
    }
}

extension BuildContext {
    /// `voice_processing: on` needs both directions of the device: the microphone it
    /// cleans and the loudspeaker whose signal is its reference.
    mutating func checkVoiceProcessing() {
        let device = configuration.device
        guard device.voiceProcessing else { return }
        let location = device.voiceProcessingLocation ?? device.location ?? fileLocation
        if device.capture == nil {
            error(location, "device.voice_processing: on needs device.capture (the microphone it echo-cancels); set `capture:` or turn voice processing off")
        }
        if device.playback == nil {
            error(location, "device.voice_processing: on needs device.playback (what the device plays is the canceller's reference); set `playback:` or turn voice processing off")
        }
    }
}
