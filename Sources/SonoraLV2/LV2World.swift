import CLilv
import Foundation
import SonoraCore

/// A lilv world: the LV2 plugins installed on this machine (the directories of
/// `LV2_PATH`, or lilv's defaults when it is unset), their descriptions, and the
/// URID map every plugin instantiated from it shares.
///
/// lilv is not thread-safe; every call into it goes through `withLock`, so one
/// world can serve several threads (and parallel tests).
public final class LV2World: @unchecked Sendable {
    let world: OpaquePointer
    let vocabulary: LilvVocabulary
    public let urids: URIDMap
    private let lock = NSRecursiveLock()

    /// Loads every bundle on the LV2 path. `path` replaces `LV2_PATH` (colon-separated
    /// directories); pass nil to honour the environment.
    public init(path: String? = nil) {
        world = lilv_world_new()
        if let path {
            let node = lilv_new_string(world, path)
            lilv_world_set_option(world, LILV_OPTION_LV2_PATH, node)
            lilv_node_free(node)
        }
        lilv_world_load_all(world)
        vocabulary = LilvVocabulary(world)
        urids = URIDMap()
    }

    deinit {
        vocabulary.free()
        lilv_world_free(world)
    }

    /// The process's world over `LV2_PATH`, made on first use.
    public static let shared = LV2World()

    func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Loads one more bundle (a directory holding manifest.ttl), e.g. one a test wrote.
    public func loadBundle(at path: String) throws(AudioError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw AudioError(.fileNotFound, "LV2 bundle \(path) is not a directory")
        }
        let directory = path.hasSuffix("/") ? path : path + "/"
        withLock {
            let uri = lilv_new_file_uri(world, nil, directory)
            lilv_world_load_bundle(world, uri)
            lilv_node_free(uri)
        }
    }

    /// Descriptions of every plugin, sorted by URI; `filter` keeps those whose URI, name,
    /// class or author contains it (case-insensitive).
    public func plugins(matching filter: String? = nil) -> [LV2PluginDescription] {
        withLock {
            var result: [LV2PluginDescription] = []
            let plugins = lilv_world_get_all_plugins(world)
            var iterator = lilv_plugins_begin(plugins)
            while !lilv_plugins_is_end(plugins, iterator) {
                if let plugin = lilv_plugins_get(plugins, iterator) {
                    let uri = Lilv.string(lilv_plugin_get_uri(plugin)) ?? ""
                    let name = Lilv.take(lilv_plugin_get_name(plugin)) ?? ""
                    if let filter, !filter.isEmpty, !uri.localizedCaseInsensitiveContains(filter),
                        !name.localizedCaseInsensitiveContains(filter)
                    {
                        let description = LV2PluginDescription(plugin: plugin, world: world, vocabulary: vocabulary)
                        let extra = description.className + " " + (description.author ?? "")
                        if extra.localizedCaseInsensitiveContains(filter) { result.append(description) }
                    } else {
                        result.append(LV2PluginDescription(plugin: plugin, world: world, vocabulary: vocabulary))
                    }
                }
                iterator = lilv_plugins_next(plugins, iterator)
            }
            return result.sorted { $0.uri < $1.uri }
        }
    }

    /// The URIs of every plugin (cheap: reads no plugin data beyond the manifests).
    public var pluginURIs: [String] {
        withLock {
            var result: [String] = []
            let plugins = lilv_world_get_all_plugins(world)
            var iterator = lilv_plugins_begin(plugins)
            while !lilv_plugins_is_end(plugins, iterator) {
                if let uri = Lilv.string(lilv_plugin_get_uri(lilv_plugins_get(plugins, iterator))) { result.append(uri) }
                iterator = lilv_plugins_next(plugins, iterator)
            }
            return result.sorted()
        }
    }

    /// The lilv plugin for `uri`, or a `-66751` error naming the URI.
    func lilvPlugin(_ uri: String) throws(AudioError) -> OpaquePointer {
        try LV2URIText.check(uri, what: "plugin", code: .componentUnsupportedType)
        return try withLock { () throws(AudioError) -> OpaquePointer in
            let node = lilv_new_uri(world, uri)
            defer { lilv_node_free(node) }
            guard let node, let plugin = lilv_plugins_get_by_uri(lilv_world_get_all_plugins(world), node) else {
                throw AudioError(.componentUnsupportedType, "no LV2 plugin \(uri) on the LV2 path (lv2ls lists what is installed)")
            }
            return plugin
        }
    }

    /// The description of the plugin `uri`.
    public func plugin(_ uri: String) throws(AudioError) -> LV2PluginDescription {
        let plugin = try lilvPlugin(uri)
        return withLock { LV2PluginDescription(plugin: plugin, world: world, vocabulary: vocabulary) }
    }

    /// How many presets the plugin has (without loading them).
    public func presetCount(of uri: String) -> Int {
        guard let plugin = try? lilvPlugin(uri) else { return 0 }
        return withLock {
            guard let related = lilv_plugin_get_related(plugin, vocabulary.presetClass) else { return 0 }
            defer { lilv_nodes_free(related) }
            return Int(lilv_nodes_size(related))
        }
    }

    /// The plugin's factory presets (pset:Preset resources related to it), sorted by label.
    public func presets(of uri: String) throws(AudioError) -> [LV2Preset] {
        let plugin = try lilvPlugin(uri)
        return withLock {
            var result: [LV2Preset] = []
            let related = lilv_plugin_get_related(plugin, vocabulary.presetClass)
            Lilv.forEach(related) { node in
                lilv_world_load_resource(world, node)
                guard let presetURI = Lilv.string(node) else { return }
                let labels = Lilv.takeStrings(lilv_world_find_nodes(world, node, vocabulary.rdfsLabel, nil))
                result.append(LV2Preset(uri: presetURI, label: labels.first ?? presetURI))
            }
            if let related { lilv_nodes_free(related) }
            return result.sorted { ($0.label, $0.uri) < ($1.label, $1.uri) }
        }
    }
}

/// A preset: its URI and label.
public struct LV2Preset: Hashable, Sendable, Codable {
    public var uri: String
    public var label: String
}
