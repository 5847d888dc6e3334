import CLilv

/// A plugin parameter that is not a port but a property set by patch:Set messages on the
/// plugin's control atom input (`patch:writable` / `patch:readable` lv2:Parameter).
public struct LV2PatchParameter: Hashable, Sendable, Codable {
    public var uri: String
    public var label: String
    /// `rdfs:range`: the atom type of its value (atom:Float, atom:Int, atom:Path …).
    public var range: String?
    public var minimum: Float?
    public var maximum: Float?
    public var isWritable: Bool
    public var isReadable: Bool
}

/// A patch parameter's value, by atom type.
public enum LV2PatchValue: Hashable, Sendable {
    case int(Int32), long(Int64), float(Float), double(Double), bool(Bool), string(String), path(String), urid(String)

    var typeURI: String {
        switch self {
        case .int: LV2URI.atomInt
        case .long: LV2URI.atomLong
        case .float: LV2URI.atomFloat
        case .double: LV2URI.atomDouble
        case .bool: LV2URI.atomBool
        case .string: LV2URI.atomString
        case .path: LV2URI.atomPath
        case .urid: LV2URI.atomURID
        }
    }
}

extension LV2PluginDescription {
    static func patchParameters(plugin: OpaquePointer, world: OpaquePointer, vocabulary v: LilvVocabulary) -> [LV2PatchParameter] {
        let writable = Set(Lilv.takeStrings(lilv_plugin_get_value(plugin, v.patchWritable)))
        let readable = Set(Lilv.takeStrings(lilv_plugin_get_value(plugin, v.patchReadable)))
        return writable.union(readable).sorted().map { uri in
            let node = lilv_new_uri(world, uri)
            defer { lilv_node_free(node) }
            func value(_ predicate: OpaquePointer) -> OpaquePointer? { lilv_world_get(world, node, predicate, nil) }
            return LV2PatchParameter(
                uri: uri, label: Lilv.take(value(v.rdfsLabel)) ?? uri, range: Lilv.take(value(v.rdfsRange)),
                minimum: Lilv.takeFloat(value(v.minimum)), maximum: Lilv.takeFloat(value(v.maximum)),
                isWritable: writable.contains(uri), isReadable: readable.contains(uri))
        }
    }
}
