import SonoraCore
import SonoraUnits

extension NodeKind {
    /// The 3D mixer (Mixer3DUnit): its inputs — players, tones, any node — placed around
    /// the listener, each at a position given in metres (OpenAL's frame) and movable while
    /// running over the control socket (`sonora ctl set NODE.SOURCE position x,y,z`).
    public static let mixer3d = NodeKind(
        name: "mixer3d", aliases: Mixer3DNode.aliases,
        summary: "places its inputs around the listener: per source a position [x, y, z] in metres (facing -z, +x right, +y up), gain and algorithm; output stereo, binaural, quad or 5.1; `ctl set NODE.SOURCE position x,y,z` moves a source while running",
        options: [
            NodeOption("sources", .list(Mixer3DSource.fields), required: true, "the sources, one per input in order (input N is `NODE:N`): {name, position: [x, y, z], gain, algorithm}"),
            NodeOption("output", .choice(Mixer3DLayout.allCases.map(\.rawValue)), "stereo (default), binaural (HRTF by default), quad (L R Ls Rs) or 5.1 (L R C LFE Ls Rs); the engine's channels must match, and each source is mono or stereo (`channels: 1` on a source node of a 4- or 6-channel engine)"),
            NodeOption("reference_distance", .number(0.001...10_000), "metres within which a source is not attenuated (default 1)"),
            NodeOption("maximum_distance", .number(0.001...10_000), "metres beyond which a source gets no quieter (default 10000)"),
            NodeOption("maximum_attenuation", .number(0...120, unit: "dB"), "the most a source is attenuated by distance, dB"),
            NodeOption("attenuation_curve", .choice(Mixer3DNode.curves), "how gain falls with distance: power, exponential, inverse (default) or linear"),
            NodeOption("distance_attenuation", .boolean, "`false`: every source at its own gain whatever its distance"),
            NodeOption("hrtf", .inputFile, "the SOFA file hrtf sources use (default: Debian's MIT KEMAR set)"),
        ],
        usesEngineFormat: false,
        sourceParameters: [Mixer3DNode.position],
        currentOptions: Mixer3DNode.currentOptions,
        isSavedByOptions: Mixer3DNode.isSavedByOptions,
        make: Mixer3DNode.make)
}

/// How a mixer3d node is built, read back and moved.
enum Mixer3DNode {
    typealias Parameter = Mixer3DUnit.Parameter

    /// Other names: the unit's registry name (so `sonora units` shows this kind, not a bare unit).
    static let aliases = ["3DMixer", "Mixer3D"]
    static let curves = ["power", "exponential", "inverse", "linear"]

    static func make(_ build: inout NodeBuild) -> AudioUnit? {
        guard let sourcesOption = build.option("sources"), let items = sourcesOption.value.list else { return nil }
        let sources = Mixer3DSource.sources(items)
        var valid = true
        func location(_ index: Int, _ field: String) -> SourceLocation { items[index][field]?.location ?? sourcesOption.location }
        var names: [String: Int] = [:]
        for (index, source) in sources.enumerated() {
            let lower = source.name.lowercased()
            // `sourceN` names source N: another source may not take it.
            if lower.hasPrefix("source"), let number = Int(lower.dropFirst(6)), number != index, sources.indices.contains(number) {
                build.error(location(index, "name"), "node '\(build.spec.id)': '\(source.name)' is the name of source \(number) (sources are `sourceN` unless named); name source \(index) otherwise")
                valid = false
                continue
            }
            if let first = names[lower] {
                build.error(location(index, "name"), "node '\(build.spec.id)': source name '\(source.name)' is used twice (sources \(first) and \(index))")
                valid = false
            }
            names[lower] = names[lower] ?? index
            if let problem = source.position.rangeProblem {
                build.error(location(index, "position"), "node '\(build.spec.id)': \(problem.message)")
                valid = false
            }
        }
        let layout = build.option("output")?.value.text.flatMap(Mixer3DLayout.init(rawValue:)) ?? .stereo
        let channels = build.configuration.engine.channels
        guard layout.channels == channels else {
            build.error(at: "output", "output \(layout.rawValue) has \(layout.channels) channels; the engine runs \(channels) (set engine.channels: \(layout.channels)\(layout.channels == 2 ? "" : ", or output: stereo"))")
            return nil
        }
        for (index, source) in sources.enumerated() {
            let algorithm = source.algorithm ?? layout.defaultAlgorithm
            if layout.channels != 2 && (algorithm == .hrtf || algorithm == .passThrough) {
                build.error(location(index, "algorithm"), "node '\(build.spec.id)': \(algorithm.rawValue) renders two channels; use it with output stereo or binaural")
                valid = false
            }
        }
        // Each source runs at its own width (declared, else its feed's, else the engine's):
        // the 3D mixer takes mono or stereo, so a 4.0/5.1 scene's sources say `channels: 1` (or 2).
        for index in sources.indices {
            let width = build.inputWidth(index)
            guard width == 1 || width == 2 else {
                build.error(location(index, "position"), "node '\(build.spec.id)': source \(index) ('\(sources[index].name)') would be \(width) channels wide (the engine's, or what feeds it); the 3D mixer takes mono or stereo sources: declare `channels: 1` (or 2) on the node feeding `\(build.spec.id):\(index)`, or put a channel_map (`map: [0]`) before it")
                valid = false
                continue
            }
        }
        guard valid else { return nil }
        let unit = Mixer3DUnit(inputs: sources.count)
        // The layout's channels out; in, each source's width: a stereo source is placed as a
        // pair ±30° about its azimuth, as OpenAL Soft places one.
        do {
            try unit.setStreamFormat(.canonical(sampleRate: build.format.sampleRate, channels: layout.channels), scope: .output, element: 0)
            for element in sources.indices {
                try unit.setStreamFormat(.canonical(sampleRate: build.format.sampleRate, channels: build.inputWidth(element)), scope: .input, element: element)
            }
        } catch {
            build.error(at: "output", error)
            return nil
        }
        if let path = build.option("hrtf") == nil ? nil : build.path("hrtf") {
            do { try unit.setProperty(.hrtfFilePath, scope: .global, element: 0, to: .filePath(path)) } catch { build.error(at: "hrtf", error) }
        }
        let distance = Mixer3DUnit.DistanceParameters(
            referenceDistance: Float(build.option("reference_distance")?.value.number ?? 1),
            maximumDistance: Float(build.option("maximum_distance")?.value.number ?? 10_000),
            maximumAttenuation: Float(build.option("maximum_attenuation")?.value.number ?? 120))
        if distance.maximumDistance < distance.referenceDistance {
            build.error(at: build.option("maximum_distance") == nil ? "reference_distance" : "maximum_distance",
                        "maximum_distance \(OptionValue.format(Double(distance.maximumDistance))) m is below reference_distance \(OptionValue.format(Double(distance.referenceDistance))) m")
            return nil
        }
        let curve = build.option("attenuation_curve")?.value.text.flatMap { curves.firstIndex(of: $0) }
            .flatMap { Mixer3DUnit.AttenuationCurve(rawValue: UInt32($0)) } ?? .inverse
        var flags = Mixer3DUnit.RenderingFlags.defaults
        if build.option("distance_attenuation")?.value.boolean == false { flags.remove(.distanceAttenuation) }
        for (element, source) in sources.enumerated() {
            let algorithm = source.algorithm ?? layout.defaultAlgorithm
            do {
                try unit.setProperty(.spatializationAlgorithm, scope: .input, element: element, to: .spatializationAlgorithm(algorithm.unitValue))
                try unit.setProperty(.renderingFlags, scope: .input, element: element, to: .renderingFlags(flags))
                try unit.setProperty(.attenuationCurve, scope: .input, element: element, to: .attenuationCurve(curve))
                try unit.setProperty(.distanceParameters, scope: .input, element: element, to: .distanceParameters(distance))
                try unit.setParameter(Parameter.gain, scope: .input, element: element, to: Float(source.gain))
                try place(unit, element: element, at: source.position, rampFrames: 0)
            } catch {
                build.error(error)
                return nil
            }
        }
        build.sources = sources.map(\.name)
        return unit
    }

    static let position = SourceParameter(
        name: "position", unit: "m", form: "x,y,z in metres, such as 1,0,-2",
        read: { unit, element in
            let point = try Mixer3DNode.position(of: unit, element: element)
            return [point.x, point.y, point.z]
        },
        write: { unit, element, text, frames in
            let point = try Mixer3DPosition.parse(text).get()
            try Mixer3DNode.place(unit, element: element, at: point, rampFrames: frames)
        })

    static func position(of unit: AudioUnit, element: Int) throws -> Mixer3DPosition {
        let azimuth = try unit.parameter(Parameter.azimuth, scope: .input, element: element)
        let elevation = try unit.parameter(Parameter.elevation, scope: .input, element: element)
        let distance = try unit.parameter(Parameter.distance, scope: .input, element: element)
        let point = Mixer3DPosition(azimuth: Double(azimuth), elevation: Double(elevation), distance: Double(distance))
        // What a round trip through Float degrees leaves: 1 µm steps.
        func clean(_ value: Double) -> Double { let rounded = (value * 1e5).rounded() / 1e5; return rounded == 0 ? 0 : rounded }
        return Mixer3DPosition(x: clean(point.x), y: clean(point.y), z: clean(point.z))
    }

    static func place(_ unit: AudioUnit, element: Int, at point: Mixer3DPosition, rampFrames: Int) throws {
        let values: [(AudioUnitParameterID, Double)] = [
            (Parameter.azimuth, point.azimuth), (Parameter.elevation, point.elevation), (Parameter.distance, point.distance),
        ]
        for (id, value) in values {
            if rampFrames > 0 {
                try unit.rampParameter(id, scope: .input, element: element, to: Float(value), duration: rampFrames)
            } else {
                try unit.setParameter(id, scope: .input, element: element, to: Float(value))
            }
        }
    }

    static let currentOptions: @Sendable (NodeSpec, AudioUnit) -> [String: OptionValue] = { spec, unit in
        var options = spec.options.mapValues(\.value)
        guard var items = options["sources"]?.list else { return options }
        for index in items.indices {
            guard let point = try? position(of: unit, element: index), let gain = try? unit.parameter(Parameter.gain, scope: .input, element: index) else { continue }
            let location = items[index]["position"]?.location ?? spec.location
            items[index]["position"] = LocatedOption(value: .point(SIMD3(point.x, point.y, point.z)), location: location)
            items[index]["gain"] = LocatedOption(value: .number(Double(gain)), location: items[index]["gain"]?.location ?? location)
        }
        options["sources"] = .list(items)
        return options
    }

    static let isSavedByOptions: @Sendable (AudioUnitParameterDefinition) -> Bool = { definition in
        definition.scope == .input && [Parameter.azimuth, Parameter.elevation, Parameter.distance, Parameter.gain].contains(definition.id)
    }
}
