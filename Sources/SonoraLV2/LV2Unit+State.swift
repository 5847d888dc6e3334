import CLilv
import Foundation
import SonoraCore
import SonoraUnits

/// Presets and state through lilv's state API: port values plus whatever the plugin
/// saves through its state interface. Control thread only. Port values may be restored
/// while rendering (they become parameter changes); a state with plugin properties is
/// refused while initialized unless the plugin supports state:threadSafeRestore.
extension LV2Unit {
    static let stateFlags = UInt32(LV2_STATE_IS_POD.rawValue | LV2_STATE_IS_PORTABLE.rawValue)

    /// lilv asks for each input control port's value by symbol; answered from the parameters.
    private static let getPortValue: LilvGetPortValueFunc = { symbol, context, size, type in
        guard let symbol, let context else { return nil }
        let unit = Unmanaged<LV2Unit>.fromOpaque(context).takeUnretainedValue()
        guard let value = try? unit.control(String(cString: symbol)) else { return nil }
        unit.stateScratch.pointee = value
        size?.pointee = 4
        type?.pointee = unit.world.urids.map(LV2URI.atomFloat)
        return UnsafeRawPointer(unit.stateScratch)
    }

    /// lilv sets port values from a state or preset; they become parameter changes.
    private static let setPortValue: LilvSetPortValueFunc = { symbol, context, value, size, type in
        guard let symbol, let context, let value else { return }
        let unit = Unmanaged<LV2Unit>.fromOpaque(context).takeUnretainedValue()
        let urids = unit.world.urids
        let number: Float
        switch type {
        case urids.map(LV2URI.atomFloat) where size == 4: number = value.load(as: Float.self)
        case urids.map(LV2URI.atomDouble) where size == 8: number = Float(value.load(as: Double.self))
        case urids.map(LV2URI.atomInt) where size == 4: number = Float(value.load(as: Int32.self))
        case urids.map(LV2URI.atomLong) where size == 8: number = Float(value.load(as: Int64.self))
        case urids.map(LV2URI.atomBool) where size == 4: number = value.load(as: Int32.self) != 0 ? 1 : 0
        default:
            unit.stateErrors.append("'\(String(cString: symbol))' has a value of type \(urids.uri(of: type) ?? "?")")
            return
        }
        let name = String(cString: symbol)
        guard let port = unit.plugin.port(symbol: name), port.kind == .control, port.direction == .input else { return }
        do {
            try unit.setControl(name, to: number)
        } catch {
            unit.stateErrors.append("\(error)")
        }
    }

    /// The whole plugin state as Turtle (lilv's state serialisation).
    public func saveState() throws(AudioError) -> String {
        let state = try newState(directory: nil)
        defer { lilv_state_free(state) }
        let uri = "urn:sonora:state"
        guard let text = world.withLock({ lilv_state_to_string(world.world, world.urids.mapFeature, world.urids.unmapFeature, state, uri, nil) }) else {
            throw AudioError(.unspecified, "\(name): lilv could not serialise the plugin's state")
        }
        defer { lilv_free(text) }
        return String(cString: text)
    }

    /// Restores a state `saveState()` made (port values and state-interface properties).
    public func restoreState(_ turtle: String) throws(AudioError) {
        guard let state = world.withLock({ lilv_state_new_from_string(world.world, world.urids.mapFeature, turtle) }) else {
            throw AudioError(.invalidPropertyValue, "\(name): the saved LV2 state is not valid Turtle")
        }
        defer { lilv_state_free(state) }
        try restore(lilvState: state, what: "saved state")
    }

    /// Loads the plugin's default state (state:loadDefaultState).
    func loadDefaultState() throws(AudioError) {
        let state = world.withLock { () -> OpaquePointer? in
            let node = lilv_new_uri(world.world, plugin.uri)
            defer { lilv_node_free(node) }
            return lilv_state_new_from_world(world.world, world.urids.mapFeature, node)
        }
        guard let state else { return }
        defer { lilv_state_free(state) }
        try restore(lilvState: state, what: "default state")
    }

    func restore(lilvState state: OpaquePointer, what: String) throws(AudioError) {
        // A state with properties goes through the plugin's restore(), which LV2 puts in the
        // instantiation threading class: not while run() may be called, unless the plugin
        // promises state:threadSafeRestore. Port values alone are always fine (they are parameters).
        let hasProperties = world.withLock { lilv_state_get_num_properties(state) } > 0
        let threadSafe = (plugin.requiredFeatures + plugin.optionalFeatures).contains(LV2URI.stateThreadSafeRestore)
        if hasProperties && isInitialized && !threadSafe {
            throw AudioError(
                .cannotDoInCurrentContext,
                "\(name): \(what) carries plugin state; \(plugin.uri) cannot restore it while rendering (no state:threadSafeRestore) — uninitialize first")
        }
        stateErrors = []
        let context = Unmanaged.passUnretained(self).toOpaque()
        preservingFloatingPointState {
            world.withLock {
                lilv_state_restore(state, instance.instance, Self.setPortValue, context, Self.stateFlags, instance.features.array)
            }
        }
        drainLog()
        if let problem = stateErrors.first {
            throw AudioError(.invalidPropertyValue, "\(name): \(what): \(problem)")
        }
    }

    func newState(directory: String?) throws(AudioError) -> OpaquePointer {
        let context = Unmanaged.passUnretained(self).toOpaque()
        let scratch = instance.features.scratchDirectory
        let state = preservingFloatingPointState { world.withLock {
            lilv_state_new_from_instance(
                instance.plugin, instance.instance, world.urids.mapFeature, scratch, directory,
                directory, directory, Self.getPortValue, context, Self.stateFlags, instance.features.array)
        } }
        guard let state else { throw AudioError(.unspecified, "\(name): lilv could not take the plugin's state") }
        return state
    }

    /// The file in its bundle a preset labelled `label` is saved as (`savePreset`).
    public static func presetFileName(label: String) -> String {
        label.map { $0.isLetter || $0.isNumber ? $0 : "_" }.reduce("") { $0 + String($1) } + ".ttl"
    }

    /// Writes the present state as a Turtle preset bundle `directory` (made if missing),
    /// with `label`, as preset `uri` (default: a file URI in the bundle). Returns the preset's URI.
    @discardableResult
    public func savePreset(label: String, directory: String, uri: String? = nil) throws(AudioError) -> String {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw AudioError(.permissions, "cannot make preset bundle \(directory): \(error.localizedDescription)")
        }
        if let uri { try LV2URIText.check(uri, what: "preset URI", code: .invalidPropertyValue) }
        let fileName = Self.presetFileName(label: label)
        let presetURI = uri ?? URL(fileURLWithPath: directory).appendingPathComponent(fileName).absoluteString
        let state = try newState(directory: directory)
        defer { lilv_state_free(state) }
        lilv_state_set_label(state, label)
        let status = world.withLock {
            lilv_state_save(
                world.world, world.urids.mapFeature, world.urids.unmapFeature, state, presetURI, directory, fileName)
        }
        guard status == 0 else { throw AudioError(.permissions, "\(name): lilv could not write preset \(fileName) in \(directory)") }
        return presetURI
    }

    // MARK: Factory presets

    /// The plugin's presets, numbered by their label order.
    public var lv2Presets: [LV2Preset] {
        if let presetCache { return presetCache }
        let presets = (try? world.presets(of: plugin.uri)) ?? []
        presetCache = presets
        return presets
    }

    var lv2FactoryPresets: [AudioUnitPreset] {
        lv2Presets.enumerated().map { AudioUnitPreset(number: $0.offset, name: $0.element.label) }
    }

    func applyLV2Preset(_ preset: AudioUnitPreset) throws(AudioError) {
        let presets = lv2Presets
        guard preset.number >= 0 && preset.number < presets.count else {
            throw AudioError(.invalidPropertyValue, "\(name) has no factory preset \(preset.number)")
        }
        try applyPreset(uri: presets[preset.number].uri)
    }

    /// Applies a preset named by its URI or its label (case-insensitive), as configs and
    /// the CLI name them; an unknown one is an error listing the plugin's presets.
    public func applyPreset(named preset: String) throws(AudioError) {
        let presets = lv2Presets
        if let match = presets.first(where: { $0.uri == preset })
            ?? presets.first(where: { $0.label.lowercased() == preset.lowercased() })
        {
            return try applyPreset(uri: match.uri)
        }
        if LV2URIText.problem(preset) == nil {
            // A preset of another bundle (loaded with `LV2World.loadBundle`) is named by URI.
            return try applyPreset(uri: preset)
        }
        let list = presets.isEmpty ? "it has no presets" : "its presets: " + presets.map(\.label).joined(separator: ", ")
        throw AudioError(.invalidPropertyValue, "\(name) has no preset '\(LV2URIText.excerpt(preset))' (\(list))")
    }

    /// Applies a preset by URI (a factory preset, or one loaded with `LV2World.loadBundle`).
    public func applyPreset(uri: String) throws(AudioError) {
        try LV2URIText.check(uri, what: "preset")
        let state = world.withLock { () -> OpaquePointer? in
            guard let node = lilv_new_uri(world.world, uri) else { return nil }
            defer { lilv_node_free(node) }
            lilv_world_load_resource(world.world, node)
            return lilv_state_new_from_world(world.world, world.urids.mapFeature, node)
        }
        guard let state else {
            throw AudioError(.invalidPropertyValue, "\(name): no preset \(uri) (is its bundle on the LV2 path?)")
        }
        defer { lilv_state_free(state) }
        try restore(lilvState: state, what: "preset \(uri)")
    }

    // MARK: ClassInfo

    var lv2ExtraState: [String: String] {
        var extra = ["lv2:uri": plugin.uri]
        if let turtle = try? saveState() { extra["lv2:state"] = turtle }
        return extra
    }

    func restoreLV2ExtraState(_ extra: [String: String]) throws(AudioError) {
        if let uri = extra["lv2:uri"], uri != plugin.uri {
            throw AudioError(.invalidPropertyValue, "state is for LV2 plugin \(uri), not \(plugin.uri)")
        }
        if let turtle = extra["lv2:state"] { try restoreState(turtle) }
    }
}
