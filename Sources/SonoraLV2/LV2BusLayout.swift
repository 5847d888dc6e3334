/// How a plugin's audio and CV ports become the elements (buses) of an audio unit.
///
/// The rule, per direction:
/// 1. Ports of one `pg:group` form one bus; a group is the main bus (element 0) when
///    the plugin names it `pg:mainInput` / `pg:mainOutput`, or else when it is the
///    first group (by lowest port index) that is not a sidechain.
/// 2. Ungrouped non-sidechain audio ports form one bus (the main bus if there is no group).
/// 3. Sidechain ports (`lv2:isSideChain`) form buses of their own, after the main ones:
///    one per group, one for the ungrouped ones.
/// 4. CV ports form one last bus (CV is audio-rate in Sonora's model).
/// Within a bus, channels follow the ports' channel designations (pg:left, pg:right,
/// pg:center …), then port index — never raw index order across directions, which some
/// plugins interleave (in L, out L, in R, out R).
public struct LV2BusLayout: Hashable, Sendable {
    public struct Bus: Hashable, Sendable {
        public var name: String
        /// Port indices, one per channel, in channel order.
        public var ports: [Int]
        public var isSideChain: Bool
        public var isCV: Bool
    }

    public var inputs: [Bus]
    public var outputs: [Bus]

    public init(_ plugin: LV2PluginDescription) {
        inputs = Self.buses(plugin, .input, main: plugin.mainInputGroup)
        outputs = Self.buses(plugin, .output, main: plugin.mainOutputGroup)
    }

    static func channelRank(_ port: LV2Port) -> Int {
        port.designation.flatMap { LV2URI.channelOrder.firstIndex(of: $0) } ?? LV2URI.channelOrder.count
    }

    static func ordered(_ ports: [LV2Port]) -> [Int] {
        ports.sorted { (channelRank($0), $0.index) < (channelRank($1), $1.index) }.map(\.index)
    }

    static func groupName(_ uri: String) -> String {
        let tail = uri.split(whereSeparator: { $0 == "#" || $0 == "/" }).last.map(String.init) ?? uri
        return tail
    }

    static func buses(_ plugin: LV2PluginDescription, _ direction: LV2Port.Direction, main: String?) -> [Bus] {
        let audio = plugin.ports(.audio, direction)
        let grouped = Dictionary(grouping: audio.filter { $0.group != nil }, by: { $0.group! })
        var groupBuses = grouped.map { uri, ports in
            (
                first: ports.map(\.index).min() ?? 0, uri: uri,
                bus: Bus(name: groupName(uri), ports: ordered(ports), isSideChain: ports.allSatisfy(\.isSideChain), isCV: false)
            )
        }
        groupBuses.sort { $0.first < $1.first }
        var mainBuses = groupBuses.filter { !$0.bus.isSideChain }
        if let main, let position = mainBuses.firstIndex(where: { $0.uri == main }) {
            mainBuses.insert(mainBuses.remove(at: position), at: 0)
        }
        var result = mainBuses.map(\.bus)
        let ungroupedMain = audio.filter { $0.group == nil && !$0.isSideChain }
        if !ungroupedMain.isEmpty {
            let bus = Bus(name: direction == .input ? "in" : "out", ports: ordered(ungroupedMain), isSideChain: false, isCV: false)
            result.append(bus)
        }
        result += groupBuses.filter(\.bus.isSideChain).map(\.bus)
        let ungroupedSide = audio.filter { $0.group == nil && $0.isSideChain }
        if !ungroupedSide.isEmpty {
            result.append(Bus(name: "sidechain", ports: ordered(ungroupedSide), isSideChain: true, isCV: false))
        }
        let cv = plugin.ports(.cv, direction)
        if !cv.isEmpty { result.append(Bus(name: "cv", ports: cv.map(\.index), isSideChain: false, isCV: true)) }
        return result
    }

    /// Every (element, channel) of a direction with its port index, in element order.
    public func channels(_ direction: LV2Port.Direction) -> [(element: Int, channel: Int, port: Int)] {
        var result: [(Int, Int, Int)] = []
        for (element, bus) in (direction == .input ? inputs : outputs).enumerated() {
            for (channel, port) in bus.ports.enumerated() { result.append((element, channel, port)) }
        }
        return result
    }
}
