import CLilv

/// Everything Sonora reads about a plugin from its Turtle, as plain values
/// (made under the world's lock; safe to keep and pass around).
public struct LV2PluginDescription: Hashable, Sendable, Codable {
    public var uri: String
    public var name: String
    public var className: String
    public var author: String?
    public var bundlePath: String?
    public var libraryPath: String?
    public var ports: [LV2Port]
    public var requiredFeatures: [String]
    public var optionalFeatures: [String]
    public var extensionData: [String]
    /// Index of the control output that reports latency, if any.
    public var latencyPortIndex: Int?
    /// `pg:mainInput` / `pg:mainOutput`: the groups that are the plugin's main buses.
    public var mainInputGroup: String?
    public var mainOutputGroup: String?
    /// Parameters reached by patch:Set / patch:Get messages rather than ports.
    public var patchParameters: [LV2PatchParameter] = []
    /// What is wrong with the plugin's Turtle (ports without index or symbol …); non-empty means it is refused.
    public var problems: [String] = []

    public func ports(_ kind: LV2Port.Kind, _ direction: LV2Port.Direction) -> [LV2Port] {
        ports.filter { $0.kind == kind && $0.direction == direction }
    }

    public func port(symbol: String) -> LV2Port? { ports.first { $0.symbol == symbol } }

    public func port(index: Int) -> LV2Port? { ports.first { $0.index == index } }

    /// Required features the host does not provide (a non-empty list means instantiation is refused).
    public var missingFeatures: [String] {
        requiredFeatures.filter { !LV2URI.providedFeatures.contains($0) }
    }

    /// lv2:inPlaceBroken: input and output buffers must never alias. Sonora never aliases them
    /// for any plugin (inputs are the unit's pulled buffers, outputs the caller's or its own).
    public var isInPlaceBroken: Bool { requiredFeatures.contains(LV2URI.inPlaceBroken) }

    /// lv2:hardRTCapable: the plugin promises a realtime-safe run(). Sonora runs others too, but says so.
    public var isHardRTCapable: Bool {
        requiredFeatures.contains(LV2URI.hardRTCapable) || optionalFeatures.contains(LV2URI.hardRTCapable)
    }

    /// lv2:isLive: the plugin must run in real time (it talks to hardware or the outside world).
    public var isLive: Bool { requiredFeatures.contains(LV2URI.isLive) || optionalFeatures.contains(LV2URI.isLive) }
}

extension LV2PluginDescription {
    init(plugin: OpaquePointer, world: OpaquePointer, vocabulary v: LilvVocabulary) {
        uri = Lilv.string(lilv_plugin_get_uri(plugin)) ?? "?"
        name = Lilv.take(lilv_plugin_get_name(plugin)) ?? uri
        className = Lilv.string(lilv_plugin_class_get_label(lilv_plugin_get_class(plugin))) ?? "Plugin"
        author = Lilv.take(lilv_plugin_get_author_name(plugin))
        bundlePath = Lilv.path(lilv_plugin_get_bundle_uri(plugin))
        libraryPath = Lilv.path(lilv_plugin_get_library_uri(plugin))
        requiredFeatures = Lilv.takeStrings(lilv_plugin_get_required_features(plugin))
        optionalFeatures = Lilv.takeStrings(lilv_plugin_get_optional_features(plugin))
        extensionData = Lilv.takeStrings(lilv_plugin_get_extension_data(plugin))
        mainInputGroup = Lilv.takeStrings(lilv_plugin_get_value(plugin, v.mainInput)).first
        mainOutputGroup = Lilv.takeStrings(lilv_plugin_get_value(plugin, v.mainOutput)).first

        let count = Int(lilv_plugin_get_num_ports(plugin))
        var minimums = [Float](repeating: .nan, count: count)
        var maximums = [Float](repeating: .nan, count: count)
        var defaults = [Float](repeating: .nan, count: count)
        lilv_plugin_get_port_ranges_float(plugin, &minimums, &maximums, &defaults)
        var ports: [LV2Port] = []
        for index in 0..<count {
            guard let port = lilv_plugin_get_port_by_index(plugin, UInt32(index)) else {
                problems.append("no port with index \(index) (indices must run 0…\(count - 1))")
                continue
            }
            if lilv_port_get_symbol(plugin, port) == nil { problems.append("port \(index) has no lv2:symbol") }
            func isA(_ node: OpaquePointer) -> Bool { lilv_port_is_a(plugin, port, node) }
            let kind: LV2Port.Kind =
                isA(v.audioPort) ? .audio : isA(v.controlPort) ? .control : isA(v.cvPort) ? .cv
                : isA(v.atomPort) ? .atom : .unknown
            let direction: LV2Port.Direction = isA(v.outputPort) ? .output : .input
            let properties = Set(Lilv.takeStrings(lilv_port_get_properties(plugin, port)))
            var scalePoints: [LV2Port.ScalePoint] = []
            if let points = lilv_port_get_scale_points(plugin, port) {
                var iterator = lilv_scale_points_begin(points)
                while !lilv_scale_points_is_end(points, iterator) {
                    let point = lilv_scale_points_get(points, iterator)
                    scalePoints.append(
                        .init(
                            value: lilv_node_as_float(lilv_scale_point_get_value(point)),
                            label: Lilv.string(lilv_scale_point_get_label(point)) ?? ""))
                    iterator = lilv_scale_points_next(points, iterator)
                }
                lilv_scale_points_free(points)
            }
            scalePoints.sort { $0.value < $1.value }
            let minimumSize = Lilv.takeFloat(lilv_port_get(plugin, port, v.minimumSize)).map { Int($0) }
            ports.append(
                LV2Port(
                    index: index, symbol: Lilv.string(lilv_port_get_symbol(plugin, port)) ?? "port\(index)",
                    name: Lilv.take(lilv_port_get_name(plugin, port)) ?? "Port \(index)", kind: kind,
                    direction: direction, minimum: minimums[index].isNaN ? nil : minimums[index],
                    maximum: maximums[index].isNaN ? nil : maximums[index],
                    defaultValue: defaults[index].isNaN ? nil : defaults[index], properties: properties,
                    designation: Lilv.take(lilv_port_get(plugin, port, v.designation)),
                    group: Lilv.take(lilv_port_get(plugin, port, v.group)),
                    unit: Lilv.take(lilv_port_get(plugin, port, v.unit)), scalePoints: scalePoints,
                    minimumSize: minimumSize, supports: Lilv.takeStrings(lilv_port_get_value(plugin, port, v.atomSupports))))
        }
        self.ports = ports
        // lilv drops every port of a plugin when one is invalid (no symbol, bad index): compare
        // with the lv2:port statements the Turtle makes.
        let declared = lilv_plugin_get_value(plugin, v.port).map { nodes -> Int in
            defer { lilv_nodes_free(nodes) }
            return Int(lilv_nodes_size(nodes))
        } ?? 0
        if declared != count {
            problems.append("it declares \(declared) ports, of which lilv could load \(count) (a port lacks a valid lv2:symbol or lv2:index)")
        }
        latencyPortIndex = ports.first(where: \.reportsLatency)?.index
        patchParameters = Self.patchParameters(plugin: plugin, world: world, vocabulary: v)
    }
}
