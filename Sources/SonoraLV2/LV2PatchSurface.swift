import SonoraCore

/// What a host's control side reaches of an LV2 node's patch parameters and atom traffic —
/// one plugin instance (`LV2Unit`) or linked instances (`LV2LinkedUnit`), which take every
/// message on all of them and answer from the first. The socket's `patch` command talks to this.
public protocol LV2PatchSurface: AnyObject {
    var world: LV2World { get }
    var plugin: LV2PluginDescription { get }
    /// The values the plugin last announced (patch:Set on its outputs), by parameter URI.
    var patchValues: [String: LV2PatchValue] { get }
    func setPatchParameter(_ uri: String, to value: LV2PatchValue) throws(AudioError)
    func requestPatchValues() throws(AudioError)
    @discardableResult func drainAtomOutputs() -> [LV2Unit.AtomEvent]
    /// A MIDI message (≤ 3 bytes) at a frame offset into the next render.
    func sendMIDI(_ bytes: [UInt8], at frameOffset: Int) throws(AudioError)
}

extension LV2Unit: LV2PatchSurface {}
