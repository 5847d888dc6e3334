import CLilv

/// Small helpers over lilv's node API, which Swift sees as opaque pointers.
enum Lilv {
    static func string(_ node: OpaquePointer?) -> String? {
        guard let node, let text = lilv_node_as_string(node) else { return nil }
        return String(cString: text)
    }

    /// A node the caller owns (lilv's `lilv_port_get` / `lilv_plugin_get_name` style): read, then freed.
    static func take(_ node: OpaquePointer?) -> String? {
        defer { if let node { lilv_node_free(node) } }
        return string(node)
    }

    static func takeFloat(_ node: OpaquePointer?) -> Float? {
        guard let node else { return nil }
        defer { lilv_node_free(node) }
        guard lilv_node_is_float(node) || lilv_node_is_int(node) else { return nil }
        return lilv_node_as_float(node)
    }

    /// The strings of a node collection the caller owns (freed here).
    static func takeStrings(_ nodes: UnsafeMutableRawPointer?) -> [String] {
        guard let nodes else { return [] }
        defer { lilv_nodes_free(nodes) }
        return strings(nodes)
    }

    /// The strings of a node collection lilv owns.
    static func strings(_ nodes: UnsafeRawPointer?) -> [String] {
        guard let nodes else { return [] }
        var result: [String] = []
        var iterator = lilv_nodes_begin(nodes)
        while !lilv_nodes_is_end(nodes, iterator) {
            if let text = string(lilv_nodes_get(nodes, iterator)) { result.append(text) }
            iterator = lilv_nodes_next(nodes, iterator)
        }
        return result
    }

    /// Calls `body` with each node of a collection lilv owns.
    static func forEach(_ nodes: UnsafeRawPointer?, _ body: (OpaquePointer) -> Void) {
        guard let nodes else { return }
        var iterator = lilv_nodes_begin(nodes)
        while !lilv_nodes_is_end(nodes, iterator) {
            if let node = lilv_nodes_get(nodes, iterator) { body(node) }
            iterator = lilv_nodes_next(nodes, iterator)
        }
    }

    /// A path from a `file://` URI node.
    static func path(_ node: OpaquePointer?) -> String? {
        guard let node, let uri = lilv_node_as_uri(node) else { return nil }
        guard let path = lilv_file_uri_parse(uri, nil) else { return nil }
        defer { lilv_free(path) }
        return String(cString: path)
    }
}

/// The URI nodes a world queries with, made once.
final class LilvVocabulary {
    let audioPort, controlPort, cvPort, atomPort, eventPort, inputPort, outputPort: OpaquePointer
    let connectionOptional, toggled, integer, enumeration, sampleRate, reportsLatency, latency, isSideChain: OpaquePointer
    let designation, logarithmic, unit, minimumSize, group, mainInput, mainOutput, atomSupports, midiEvent: OpaquePointer
    let presetClass, rdfsLabel, notOnGUI, patchWritable, patchReadable, enabled, freeWheeling, inPlaceBroken: OpaquePointer
    let unitSymbol, port, rdfsRange, minimum, maximum: OpaquePointer
    private var all: [OpaquePointer] = []

    init(_ world: OpaquePointer) {
        var made: [OpaquePointer] = []
        func uri(_ text: String) -> OpaquePointer {
            let node = lilv_new_uri(world, text)!
            made.append(node)
            return node
        }
        audioPort = uri(LV2URI.audioPort)
        controlPort = uri(LV2URI.controlPort)
        cvPort = uri(LV2URI.cvPort)
        atomPort = uri(LV2URI.atomPort)
        eventPort = uri(LV2URI.eventPort)
        inputPort = uri(LV2URI.inputPort)
        outputPort = uri(LV2URI.outputPort)
        connectionOptional = uri(LV2URI.connectionOptional)
        toggled = uri(LV2URI.toggled)
        integer = uri(LV2URI.integer)
        enumeration = uri(LV2URI.enumeration)
        sampleRate = uri(LV2URI.sampleRate)
        reportsLatency = uri(LV2URI.reportsLatency)
        latency = uri(LV2URI.latency)
        isSideChain = uri(LV2URI.isSideChain)
        designation = uri(LV2URI.designation)
        logarithmic = uri(LV2URI.logarithmic)
        unit = uri(LV2URI.unit)
        minimumSize = uri(LV2URI.minimumSize)
        group = uri(LV2URI.portGroup)
        mainInput = uri(LV2URI.mainInput)
        mainOutput = uri(LV2URI.mainOutput)
        atomSupports = uri(LV2URI.atomSupports)
        midiEvent = uri(LV2URI.midiEvent)
        presetClass = uri(LV2URI.presetClass)
        rdfsLabel = uri(LV2URI.rdfsLabel)
        notOnGUI = uri(LV2URI.notOnGUI)
        patchWritable = uri(LV2URI.patchWritable)
        patchReadable = uri(LV2URI.patchReadable)
        enabled = uri(LV2URI.enabled)
        freeWheeling = uri(LV2URI.freeWheeling)
        inPlaceBroken = uri(LV2URI.inPlaceBroken)
        unitSymbol = uri("http://lv2plug.in/ns/extensions/units#symbol")
        port = uri(LV2URI.lv2 + "port")
        rdfsRange = uri(LV2URI.rdfsRange)
        minimum = uri(LV2URI.minimum)
        maximum = uri(LV2URI.maximum)
        all = made
    }

    func free() {
        for node in all { lilv_node_free(node) }
        all = []
    }
}
